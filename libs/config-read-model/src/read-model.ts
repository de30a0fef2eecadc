// The services' one read model of configuration: bots, each bot's validated pipeline, models with
// their keys resolved, the enabled MCP servers, pipelines' runner settings and the instance settings,
// all read from Postgres through one kind of cache. One `config.changed` subscription drops what an
// event names (and everything on a reconnect or an unreadable event); the TTL only bounds how stale a
// row can get if an event is lost while the connection stays up.
import { LRUCache } from 'lru-cache';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { AdminApi, CONFIG_CACHE_SAFETY_TTL_MS, ModelProviderKind, storableText, type ConfigChanged } from '@conveyor/contracts';
import { botPipelineOf, type BotPipeline, type ConfigIssue } from '@conveyor/pipeline';
import { findBotWithPipeline, resolveApiKey, type PrismaClient } from '@conveyor/persistence';
import { subscribeConfigChanges } from '@conveyor/bus';

/** A bot as ingress and the dispatcher route to it. */
export interface BotEntry {
  id: string;
  adapter: string;
  adapterConfig: unknown;
  enabled: boolean;
}

/** A model configuration with its secret resolved (the runner's `ResolvedModel` has this shape). */
export interface ModelConfig {
  id: string;
  provider: ModelProviderKind;
  baseUrl: string;
  apiKey: string;
  modelId: string;
  abilities: string[];
  extraArgs: Record<string, unknown>;
  timeoutMs: number;
  pricing?: { inputPerMTok: number; outputPerMTok: number };
}

/** An enabled bot as the gateway and the web chat list them. */
export interface EnabledBot extends BotEntry {
  name: string;
}

/** Enabled bots a listing holds at most (a deployment runs tens, not thousands). */
export const MAX_LISTED_BOTS = 5_000;

/** An enabled MCP server of a transport this release speaks. */
export interface McpServerEntry {
  id: string;
  name: string;
  transport: 'stdio' | 'http' | 'sse';
  config: Record<string, unknown>;
}

/** The stored instance settings: valid values, or the issues that make them unusable. */
export type StoredInstanceSettings = { ok: true; values: AdminApi.InstanceSettingsValues } | { ok: false; issues: string[] };

export interface ConfigLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface ConfigReadModelOptions {
  /** Safety bound on a cached row's age (ms). 0 reads Postgres every time. */
  ttlMs?: number;
  /** Ingress's BOT_CACHE_SECONDS, when it differs from `ttlMs`: 0 keeps no bot cached. */
  botTtlMs?: number;
  /** Entries per kind of row. */
  maxEntries?: number;
  /** A bot's pipeline did not validate (logged by the owner, once per load). */
  onPipelineRejected?: (botId: string, pipelineId: string, issues: ConfigIssue[]) => void;
}

type Prisma = Pick<PrismaClient, 'bot' | 'llmModel' | 'mcpServer' | 'pipeline' | 'instanceSettings' | 'skill'>;

/**
 * The one cache implementation of the read model: rows by key, boxed so a row that does not exist is
 * remembered too, bounded in entries and age. A failed read is not kept (the next ask reads again);
 * concurrent asks for one key share one read. A TTL of 0 keeps nothing (an LRUCache with ttl 0 would
 * keep entries for ever).
 */
export class ConfigCache<V extends {}> {
  private readonly cache: LRUCache<string, { value: V | null }> | undefined;

  constructor(private readonly load: (key: string) => Promise<V | null>, ttlMs: number, max: number) {
    this.cache = ttlMs > 0 ? new LRUCache<string, { value: V | null }>({ max, ttl: ttlMs, fetchMethod: async (key): Promise<{ value: V | null }> => ({ value: await load(key) }) }) : undefined;
  }

  async get(key: string): Promise<V | null> {
    if (!this.cache) return this.load(key);
    return (await this.cache.fetch(key))?.value ?? null;
  }

  delete(key: string): void {
    this.cache?.delete(key);
  }

  clear(): void {
    this.cache?.clear();
  }
}

/** One key for the row sets the read model caches whole (the enabled MCP servers, the settings row). */
const ALL = '*';

/** An installed skill as a run's prompt lists it. */
export interface SkillEntry {
  name: string;
  description: string;
  revision: number;
}

interface ModelEntry {
  row: { id: string; provider: string; baseUrl: string; apiKeyRef: string; modelId: string; abilities: string[]; extraArgs: unknown; timeoutMs: number; inputPricePerMTok: number | null; outputPricePerMTok: number | null };
  /** Resolved on first use, not on read: a key that cannot be resolved fails each ask, not the abilities. */
  resolved?: ModelConfig;
}

export class ConfigReadModel {
  private readonly bots: ConfigCache<BotEntry>;
  private readonly pipelines: ConfigCache<BotPipeline>;
  private readonly models: ConfigCache<ModelEntry>;
  private readonly runnerSettings: ConfigCache<{ config: unknown }>;
  private readonly mcp: ConfigCache<McpServerEntry[]>;
  private readonly settings: ConfigCache<StoredInstanceSettings>;
  private readonly skillList: ConfigCache<SkillEntry[]>;
  private subscription: Subscription | undefined;

  constructor(private readonly prisma: Prisma, options: ConfigReadModelOptions = {}) {
    const ttl = options.ttlMs ?? CONFIG_CACHE_SAFETY_TTL_MS;
    const max = options.maxEntries ?? 10_000;
    const rejected = options.onPipelineRejected ?? (() => undefined);
    this.bots = new ConfigCache((id) => this.loadBot(id), options.botTtlMs ?? ttl, max);
    this.pipelines = new ConfigCache((id) => this.loadBotPipeline(id, rejected), ttl, max);
    this.models = new ConfigCache((id) => this.loadModel(id), ttl, max);
    this.runnerSettings = new ConfigCache<{ config: unknown }>(async (id) => (storableText(id) === id ? prisma.pipeline.findUnique({ where: { id }, select: { config: true } }) : null), ttl, max);
    this.mcp = new ConfigCache(() => this.loadMcpServers(), ttl, 1);
    this.settings = new ConfigCache(() => this.loadSettings(), ttl, 1);
    this.skillList = new ConfigCache(() => prisma.skill.findMany({ select: { name: true, description: true, revision: true }, orderBy: { name: 'asc' }, take: 1000 }), ttl, 1);
  }

  /** A bot by id; null when it does not exist. */
  bot(botId: string): Promise<BotEntry | null> {
    return this.bots.get(botId);
  }

  /**
   * The enabled bots by name (at most MAX_LISTED_BOTS), read from Postgres on every ask: the
   * gateway's supervisor lists them once per tick, so a bot enabled by any writer (one that
   * announces nothing included) gets its connection within a tick, and one listing per tick is a
   * cost the cache would not save.
   */
  enabledBots(): Promise<EnabledBot[]> {
    return this.prisma.bot.findMany({ where: { enabled: true }, select: { id: true, name: true, adapter: true, adapterConfig: true, enabled: true }, orderBy: [{ name: 'asc' }, { id: 'asc' }], take: MAX_LISTED_BOTS });
  }

  /** A bot with its pipeline parsed and validated; an invalid pipeline is kept as invalid with its issues. */
  botPipeline(botId: string): Promise<BotPipeline | null> {
    return this.pipelines.get(botId);
  }

  /** A model with its key resolved; null when it does not exist. Throws when its key or provider is unusable. */
  async model(id: string): Promise<ModelConfig | null> {
    const entry = await this.models.get(id);
    if (!entry) return null;
    entry.resolved ??= resolveModel(entry.row);
    return entry.resolved;
  }

  /** A model's abilities, without resolving its key; null when it does not exist. */
  async modelAbilities(id: string): Promise<string[] | null> {
    return (await this.models.get(id))?.row.abilities ?? null;
  }

  /** A pipeline's stored config (the external runners' settings live there); null when it does not exist. */
  async pipelineConfig(pipelineId: string): Promise<{ config: unknown } | null> {
    return this.runnerSettings.get(pipelineId);
  }

  /** The enabled MCP servers of a known transport, by id. */
  async mcpServers(): Promise<McpServerEntry[]> {
    return (await this.mcp.get(ALL)) ?? [];
  }

  /** The installed Agent Skills, names, descriptions and revisions (what a run's prompt lists). */
  async skills(): Promise<SkillEntry[]> {
    return (await this.skillList.get(ALL)) ?? [];
  }

  /** The instance settings row as stored (absent: the defaults). A database error propagates. */
  async instanceSettings(): Promise<StoredInstanceSettings> {
    return (await this.settings.get(ALL)) ?? { ok: true, values: AdminApi.InstanceSettingsValues.parse({}) };
  }

  /** Drops what `event` names; undefined (events may have been missed) drops everything. */
  invalidate(event: ConfigChanged | undefined): void {
    if (!event) {
      for (const cache of this.caches()) cache.clear();
      return;
    }
    switch (event.kind) {
      case 'bot':
        this.bots.delete(event.id);
        this.pipelines.delete(event.id);
        break;
      case 'pipeline':
        // Cached by bot: a pipeline may be any bot's.
        this.pipelines.clear();
        this.runnerSettings.delete(event.id);
        break;
      case 'model':
        this.models.delete(event.id);
        break;
      case 'mcp-server':
        this.mcp.clear();
        break;
      case 'settings':
        this.settings.clear();
        break;
      case 'skill':
        this.skillList.clear();
        break;
    }
  }

  /**
   * The one `config.changed` subscription of the process, for its lifetime (closed by draining the
   * connection). `observe` sees each event or reset first (metrics).
   */
  subscribe(nc: NatsConnection, subject: string, logger: ConfigLogger, observe: { changed?(event: ConfigChanged): void; reset?(reason: string): void } = {}): Subscription {
    this.subscription?.unsubscribe();
    this.subscription = subscribeConfigChanges(nc, subject, {
      onChange: (event) => {
        observe.changed?.(event);
        this.invalidate(event);
      },
      onReset: (reason) => {
        observe.reset?.(reason);
        logger.info({ reason }, 'dropping configuration caches');
        this.invalidate(undefined);
      },
      logger,
    });
    return this.subscription;
  }

  private caches(): Array<{ clear(): void }> {
    return [this.bots, this.pipelines, this.models, this.runnerSettings, this.mcp, this.settings, this.skillList];
  }

  private async loadBot(botId: string): Promise<BotEntry | null> {
    if (storableText(botId) !== botId) return null;
    return this.prisma.bot.findUnique({ where: { id: botId }, select: { id: true, adapter: true, adapterConfig: true, enabled: true } });
  }

  private async loadBotPipeline(botId: string, rejected: NonNullable<ConfigReadModelOptions['onPipelineRejected']>): Promise<BotPipeline | null> {
    const row = await findBotWithPipeline(this.prisma, botId);
    if (!row) return null;
    const bot = botPipelineOf(row);
    if (!bot.ok) rejected(bot.botId, bot.pipelineId, bot.issues);
    return bot;
  }

  private async loadModel(id: string): Promise<ModelEntry | null> {
    if (storableText(id) !== id) return null;
    const row = await this.prisma.llmModel.findUnique({ where: { id } });
    return row && { row };
  }

  private async loadMcpServers(): Promise<McpServerEntry[]> {
    const rows = await this.prisma.mcpServer.findMany({ where: { enabled: true }, orderBy: { id: 'asc' } });
    return rows
      .filter((r) => ['stdio', 'http', 'sse'].includes(r.transport))
      .map((r) => ({ id: r.id, name: r.name, transport: r.transport as McpServerEntry['transport'], config: (r.config ?? {}) as Record<string, unknown> }));
  }

  private async loadSettings(): Promise<StoredInstanceSettings> {
    const row = await this.prisma.instanceSettings.findUnique({ where: { id: AdminApi.INSTANCE_SETTINGS_ID } });
    const parsed = AdminApi.InstanceSettingsValues.safeParse(row?.values ?? {});
    return parsed.success ? { ok: true, values: parsed.data } : { ok: false, issues: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`) };
  }
}

function resolveModel(row: ModelEntry['row']): ModelConfig {
  // A kind this release does not know (a newer writer) is refused like an unusable key, not sent as OpenAI.
  const provider = ModelProviderKind.safeParse(row.provider);
  if (!provider.success) throw new Error(`unknown provider ${JSON.stringify(row.provider)}`);
  return {
    id: row.id,
    provider: provider.data,
    baseUrl: row.baseUrl,
    apiKey: resolveApiKey(row.apiKeyRef) ?? '',
    modelId: row.modelId,
    abilities: row.abilities,
    extraArgs: (row.extraArgs ?? {}) as Record<string, unknown>,
    timeoutMs: row.timeoutMs,
    // One price set is enough to cost the calls: the other side counts as free.
    ...(row.inputPricePerMTok !== null || row.outputPricePerMTok !== null
      ? { pricing: { inputPerMTok: row.inputPricePerMTok ?? 0, outputPerMTok: row.outputPricePerMTok ?? 0 } }
      : {}),
  };
}
