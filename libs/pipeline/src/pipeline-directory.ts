import type { ConfigIssue } from './config/load.js';
import { describeIssues, loadPipeline, type PipelineDefinition } from './pipeline.js';

/** What the store holds for a bot and its pipeline (a Prisma row fits). */
export interface BotPipelineRow {
  id: string;
  enabled: boolean;
  pipelineId: string;
  pipeline: { stages: unknown; config: unknown; extensionsPreferences?: unknown };
}

export type BotPipeline =
  | { botId: string; enabled: boolean; pipelineId: string; ok: true; pipeline: PipelineDefinition }
  | { botId: string; enabled: boolean; pipelineId: string; ok: false; issues: ConfigIssue[]; reason: string };

/**
 * A bot's pipeline, validated, cached briefly (one reply's events arrive in bursts; config changes
 * show within the TTL). An invalid pipeline is cached as invalid with its issues: it rejects its own
 * messages and nothing else.
 */
export class PipelineDirectory {
  private readonly cache = new Map<string, { value: BotPipeline | null; expires: number }>();

  constructor(
    private readonly lookup: (botId: string) => Promise<BotPipelineRow | null>,
    private readonly onRejected: (botId: string, pipelineId: string, issues: ConfigIssue[]) => void = () => undefined,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  async forBot(botId: string): Promise<BotPipeline | null> {
    const hit = this.cache.get(botId);
    if (hit && hit.expires > Date.now()) return hit.value;
    const bot = await this.lookup(botId);
    let value: BotPipeline | null = null;
    if (bot) {
      const base = { botId: bot.id, enabled: bot.enabled, pipelineId: bot.pipelineId };
      const loaded = loadPipeline(bot.pipelineId, bot.pipeline.stages, bot.pipeline.config, bot.pipeline.extensionsPreferences);
      value = loaded.ok ? { ...base, ok: true, pipeline: loaded.pipeline } : { ...base, ok: false, issues: loaded.issues, reason: describeIssues(loaded.issues) };
      if (!loaded.ok) this.onRejected(bot.id, bot.pipelineId, loaded.issues);
    }
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(botId, { value, expires: Date.now() + this.ttlMs });
    return value;
  }
}

/** Why a bot cannot run its pipeline, or null when it can. */
export function unusableReason(botId: string, bot: BotPipeline | null): string | null {
  if (!bot) return `bot ${botId} not found`;
  if (!bot.enabled) return `bot ${botId} is disabled`;
  if (!bot.ok) return `pipeline ${bot.pipelineId} rejected: ${bot.reason}`;
  return null;
}
