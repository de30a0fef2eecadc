import { LRUCache } from 'lru-cache';
import { CONFIG_CACHE_SAFETY_TTL_MS } from '@conveyor/contracts';
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
 * A bot's pipeline, validated and cached (one reply's events arrive in bursts). The owner drops
 * entries when a `ConfigChanged` event arrives; the TTL is only a safety bound. An invalid pipeline is cached as invalid with its issues: it rejects its own
 * messages and nothing else.
 */
export class PipelineDirectory {
  /** Boxed, since the cache holds no null: a bot that does not exist is remembered too. */
  private readonly cache: LRUCache<string, { value: BotPipeline | null }>;

  constructor(
    private readonly lookup: (botId: string) => Promise<BotPipelineRow | null>,
    private readonly onRejected: (botId: string, pipelineId: string, issues: ConfigIssue[]) => void = () => undefined,
    ttlMs = CONFIG_CACHE_SAFETY_TTL_MS,
    maxEntries = 10_000,
  ) {
    this.cache = new LRUCache({ max: maxEntries, ttl: ttlMs, fetchMethod: async (botId) => ({ value: await this.load(botId) }) });
  }

  /** The bot's row changed: the next lookup reads it again. */
  invalidateBot(botId: string): void {
    this.cache.delete(botId);
  }

  /** A pipeline changed (it may be any bot's), or changes may have been missed. */
  clear(): void {
    this.cache.clear();
  }

  async forBot(botId: string): Promise<BotPipeline | null> {
    return (await this.cache.fetch(botId))?.value ?? null;
  }

  private async load(botId: string): Promise<BotPipeline | null> {
    const bot = await this.lookup(botId);
    if (!bot) return null;
    const base = { botId: bot.id, enabled: bot.enabled, pipelineId: bot.pipelineId };
    const loaded = loadPipeline(bot.pipelineId, bot.pipeline.stages, bot.pipeline.config, bot.pipeline.extensionsPreferences);
    if (!loaded.ok) this.onRejected(bot.id, bot.pipelineId, loaded.issues);
    return loaded.ok ? { ...base, ok: true, pipeline: loaded.pipeline } : { ...base, ok: false, issues: loaded.issues, reason: describeIssues(loaded.issues) };
  }
}

/** Why a bot cannot run its pipeline, or null when it can. */
export function unusableReason(botId: string, bot: BotPipeline | null): string | null {
  if (!bot) return `bot ${botId} not found`;
  if (!bot.enabled) return `bot ${botId} is disabled`;
  if (!bot.ok) return `pipeline ${bot.pipelineId} rejected: ${bot.reason}`;
  return null;
}
