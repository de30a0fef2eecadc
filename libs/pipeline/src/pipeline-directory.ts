import { HumanHandoff } from '@conveyor/contracts';
import type { ConfigIssue } from './config/load.js';
import { describeIssues, loadPipeline, type PipelineDefinition } from './pipeline.js';

/** What the store holds for a bot and its pipeline (a Prisma row fits). */
export interface BotPipelineRow {
  id: string;
  enabled: boolean;
  pipelineId: string;
  pipeline: { stages: unknown; config: unknown; extensionsPreferences?: unknown };
  humanHandoff?: unknown;
}

interface BotBase {
  botId: string;
  enabled: boolean;
  pipelineId: string;
  /** How a chat asks for a person; null: it cannot (or the stored settings are unreadable). */
  humanHandoff: HumanHandoff | null;
}

export type BotPipeline =
  | (BotBase & { ok: true; pipeline: PipelineDefinition })
  | (BotBase & { ok: false; issues: ConfigIssue[]; reason: string });

/**
 * A bot's pipeline, validated. An invalid pipeline is kept as invalid with its issues: it rejects its
 * own messages and nothing else.
 */
export function botPipelineOf(bot: BotPipelineRow): BotPipeline {
  // The admin API validates these on every write; a row written another way that does not parse turns them off.
  const handoff = bot.humanHandoff == null ? null : HumanHandoff.safeParse(bot.humanHandoff);
  const base: BotBase = { botId: bot.id, enabled: bot.enabled, pipelineId: bot.pipelineId, humanHandoff: handoff?.success ? handoff.data : null };
  const loaded = loadPipeline(bot.pipelineId, bot.pipeline.stages, bot.pipeline.config, bot.pipeline.extensionsPreferences);
  return loaded.ok ? { ...base, ok: true, pipeline: loaded.pipeline } : { ...base, ok: false, issues: loaded.issues, reason: describeIssues(loaded.issues) };
}

/** Why a bot cannot run its pipeline, or null when it can. */
export function unusableReason(botId: string, bot: BotPipeline | null): string | null {
  if (!bot) return `bot ${botId} not found`;
  if (!bot.enabled) return `bot ${botId} is disabled`;
  if (!bot.ok) return `pipeline ${bot.pipelineId} rejected: ${bot.reason}`;
  return null;
}
