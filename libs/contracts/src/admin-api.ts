/**
 * The admin REST API (services/admin) as the console and automation see it: every route's request and
 * response shape under `/api/v1`. The admin service validates its inputs with these schemas (and the
 * pipeline config additionally with the pipeline library's own schema), so a client that checks with
 * them first gets the same answer.
 *
 * Conventions:
 * - Every configuration resource carries `version` (an integer, 1 on create, +1 per write). A write
 *   (PATCH, DELETE, and the enable/disable actions) must name the version it read, as the `If-Match`
 *   header (`"3"` or `3`) or the body's `version` field; a stale one gets 409 `version_conflict` and
 *   changes nothing.
 * - Errors are `AdminError`: `code` classifies, `field` names the offending input (a key path such as
 *   `config.ai.runner.runner`), `issues` lists every problem of a body that failed validation.
 * - Secrets are write-only: a model's API key is accepted and never returned; the secrets in bot,
 *   pipeline and MCP server settings (declared by each platform's schema and each runner, else judged
 *   by the key's name) come back masked (`SECRET_MASK_PREFIX` + last characters), and a masked value
 *   sent back unchanged keeps the stored secret. `env:NAME` references are not secrets and come back
 *   as they are.
 * - Lists are paged: `?limit=` (1–200, default 50) and `?cursor=` from the previous page's `nextCursor`.
 */
import { z } from 'zod';
import { AdapterName } from './messages.js';
import { MODEL_PRESET_IDS, ModelProviderKind } from './model-providers.js';
import { SkillName, WorkspaceId } from './sandbox.js';
import { HumanHandoff, HumanRequestVia } from './takeover.js';

export const ADMIN_API_BASE = '/api/v1';
/** The console's session cookie (HTTP-only, SameSite=Lax). */
export const ADMIN_SESSION_COOKIE = 'conveyor_session';
/** A masked secret starts with this; sent back as it came, the stored value is kept. */
export const SECRET_MASK_PREFIX = '••••';

// ---------------------------------------------------------------- errors

export const AdminErrorCode = z.enum([
  /** The body, query or a header failed validation; `field` and `issues` say where. */
  'validation_failed',
  /** No session cookie or bearer token, or an expired or revoked one. 401. */
  'unauthenticated',
  /** Signed in, but the role may not do this (a viewer writing). 403. */
  'forbidden',
  'not_found',
  /** The write named a version that is no longer current (409); re-read and retry. */
  'version_conflict',
  /** The write named no version (If-Match or `version`). 428. */
  'precondition_required',
  /** The id is taken, or the row is still referenced (a pipeline a bot uses). 409. */
  'conflict',
  /** The first admin user does not exist yet; finish setup first. */
  'setup_required',
  /** Too many failed sign-ins for this user name; wait (`retryAfterSeconds`). 429. */
  'rate_limited',
  /** A feature the deployment has not set up (the debug chat without the ingress URL or token); `field` names the setting. 503. */
  'not_configured',
  /** A service the request needed (a dispatcher, the platform) did not do it; the message says why. 502. */
  'unavailable',
  /** The route answers other methods (the MCP endpoint takes POST only); `field` is `method`. 405. */
  'method_not_allowed',
  'internal',
]);
export type AdminErrorCode = z.infer<typeof AdminErrorCode>;

export const AdminIssue = z.object({ path: z.string(), message: z.string() });
export type AdminIssue = z.infer<typeof AdminIssue>;

export const AdminError = z.object({
  statusCode: z.number().int(),
  code: AdminErrorCode,
  message: z.string(),
  /** The first offending input, as a key path (`body.config.ai.runner.runner`, `header.if-match`, `query.limit`). */
  field: z.string().optional(),
  issues: z.array(AdminIssue).optional(),
  /** The current version, on `version_conflict`. */
  currentVersion: z.number().int().optional(),
  /** On `rate_limited`: seconds until another try is accepted. */
  retryAfterSeconds: z.number().int().optional(),
  /**
   * On some `validation_failed` answers, the finer reason: a refused skill archive's (`unsafe_path`,
   * `link`, `too_large`, `too_many_files`, `not_a_zip`, `not_an_archive`, `no_skill_md`,
   * `bad_front_matter`, `bad_name`, `bad_description`).
   */
  reason: z.string().optional(),
});
export type AdminError = z.infer<typeof AdminError>;

// ---------------------------------------------------------------- common

export const Role = z.enum(['admin', 'viewer']);
export type Role = z.infer<typeof Role>;

export const ManagedBy = z.enum(['file', 'console']).or(z.string());

const Id = z.string().trim().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only, starting with a letter or digit');
const Name = z.string().trim().min(1).max(200);
const JsonRecord = z.record(z.string(), z.unknown());
const Timestamp = z.iso.datetime();
const Version = z.number().int().min(1);

/** The optional precondition in a write body (the `If-Match` header is the other way). */
export const VersionPrecondition = z.object({ version: Version.optional() });

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

export function Page<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}

const ResourceMeta = {
  version: Version,
  /** `file`: conveyor.yaml owns it (setup overwrites or retires it); `console`: created through the API, a file apply leaves it alone. */
  managedBy: ManagedBy,
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

// ---------------------------------------------------------------- auth

export const User = z.object({
  username: z.string(),
  role: Role,
  /** A disabled user cannot sign in (their sessions end when disabled); API tokens are separate. */
  disabled: z.boolean(),
  createdAt: Timestamp,
});
export type User = z.infer<typeof User>;

const Username = z.string().trim().min(1).max(100).regex(/^[A-Za-z0-9._@-]+$/, 'letters, digits and . _ @ - only');
/** Long enough to resist guessing; no upper bound below the body limit matters for scrypt. */
const Password = z.string().min(12, 'at least 12 characters').max(1024);

/** GET /auth/status (no sign-in needed): whether the first admin user still has to be created. */
export const AuthStatus = z.object({ setupRequired: z.boolean() });

/** POST /auth/setup: the one-time token printed to the log on first start creates the first admin. */
export const SetupRequest = z.strictObject({ token: z.string().min(1).max(500), username: Username, password: Password });

/** POST /auth/login: sets the session cookie; the body answers `Me`. */
export const LoginRequest = z.strictObject({ username: z.string().min(1).max(100), password: z.string().min(1).max(1024) });

/** GET /auth/me (also the answer of login and setup). POST /auth/logout: 204, the cookie cleared. */
export const Me = z.object({ username: z.string(), role: Role, via: z.enum(['session', 'token']) });
export type Me = z.infer<typeof Me>;

/** POST /users (admin). GET /users: `Page<User>`. DELETE /users/:username. */
export const UserCreate = z.strictObject({ username: Username, password: Password, role: Role });
/** PATCH /users/:username (admin; or anyone for their own password). */
export const UserUpdate = z.strictObject({ password: Password.optional(), role: Role.optional(), disabled: z.boolean().optional() });

/** An API token for automation: `Authorization: Bearer <secret>`. */
export const ApiToken = z.object({
  id: z.string(),
  name: z.string(),
  role: Role,
  createdBy: z.string(),
  createdAt: Timestamp,
  expiresAt: Timestamp.nullable(),
  lastUsedAt: Timestamp.nullable(),
});
export type ApiToken = z.infer<typeof ApiToken>;
/**
 * POST /tokens (admin, signed in: a token cannot create tokens); GET /tokens: `Page<ApiToken>`;
 * DELETE /tokens/:id revokes. Without `expiresInDays` a token
 * expires after 90 days. A token acts for its creator: it stops working when that user is disabled or
 * deleted, and has at most that user's current role.
 */
export const ApiTokenCreate = z.strictObject({ name: Name, role: Role, expiresInDays: z.number().int().min(1).max(3650).optional() });
/** The secret is in this answer only; it is stored hashed. */
export const ApiTokenCreated = z.object({ token: ApiToken, secret: z.string() });

// ---------------------------------------------------------------- models

export const ModelAbility = z.enum(['func_call', 'vision', 'embedding', 'rerank']);

/** Where a model's API key comes from; the key itself is never returned. */
export const ApiKeyInfo = z.object({
  source: z.enum(['none', 'env', 'encrypted']),
  /** `source: env`: the variable's name. */
  env: z.string().optional(),
  /** `source: encrypted`: the id of the key that encrypted it (see key rotation). */
  keyId: z.string().optional(),
});

export const Model = z.object({
  id: z.string(),
  name: z.string(),
  /** The API the model is reached through (`openai`: any OpenAI-compatible endpoint). */
  provider: ModelProviderKind,
  baseUrl: z.string(),
  /** The provider's model name, e.g. `gpt-4o-mini`. */
  model: z.string(),
  abilities: z.array(ModelAbility),
  extraArgs: JsonRecord,
  timeoutMs: z.number().int(),
  apiKey: ApiKeyInfo,
  /** Price of 1M input and of 1M output tokens (the query log's cost); null: no price. */
  inputPricePerMTok: z.number().nullable(),
  outputPricePerMTok: z.number().nullable(),
  ...ResourceMeta,
});
export type Model = z.infer<typeof Model>;

/** A price per 1M tokens, in the operator's currency. */
const PricePerMTok = z.number().min(0).max(1_000_000);

const BaseUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** A preset's id (GET /model-presets): it fills `provider`, `baseUrl` and `abilities` where the body leaves them out. */
const PresetId = z.string().refine((id) => MODEL_PRESET_IDS.includes(id), { error: `unknown preset; one of ${MODEL_PRESET_IDS.join(', ')}` });

const ModelFields = {
  name: Name.optional(),
  preset: PresetId.optional(),
  provider: ModelProviderKind.optional(),
  /** Required unless a preset gives it. */
  baseUrl: BaseUrl.optional(),
  model: z.string().trim().min(1).max(200),
  abilities: z.array(ModelAbility).max(4).default([]),
  extraArgs: JsonRecord.default({}),
  timeoutMs: z.number().int().min(1).max(3_600_000).default(120_000),
  /** The key itself, stored encrypted (needs CONVEYOR_SECRET_KEY). Mutually exclusive with apiKeyEnv. */
  apiKey: z.string().min(1).max(4096).optional(),
  /** Read the key from this variable in each runner's environment (`env:NAME`). */
  apiKeyEnv: EnvName.optional(),
  inputPricePerMTok: PricePerMTok.nullable().optional(),
  outputPricePerMTok: PricePerMTok.nullable().optional(),
};
/** POST /models. */
export const ModelCreate = z.strictObject({ id: Id, ...ModelFields });
/** PATCH /models/:id: any subset; `apiKey: null` (or `apiKeyEnv: null`) removes the key. */
export const ModelUpdate = z.strictObject({
  name: Name.optional(),
  provider: ModelProviderKind.optional(),
  baseUrl: BaseUrl.optional(),
  model: z.string().trim().min(1).max(200).optional(),
  abilities: z.array(ModelAbility).max(4).optional(),
  extraArgs: JsonRecord.optional(),
  timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  apiKey: z.string().min(1).max(4096).nullable().optional(),
  apiKeyEnv: EnvName.nullable().optional(),
  /** `null` removes the price. */
  inputPricePerMTok: PricePerMTok.nullable().optional(),
  outputPricePerMTok: PricePerMTok.nullable().optional(),
  version: Version.optional(),
});
/** GET /model-presets (viewer): the services a model may name as its preset. */
export const ModelPresetInfo = z.object({
  id: z.string(),
  name: z.string(),
  provider: ModelProviderKind,
  baseUrl: z.string(),
  abilities: z.array(ModelAbility),
  keysUrl: z.string(),
});
export const ModelPresetList = z.object({ items: z.array(ModelPresetInfo) });

/** POST /models/:id/test: one short chat completion (or embedding) against the model. */
export const ModelTestResult = z.object({
  ok: z.boolean(),
  latencyMs: z.number(),
  /** The first characters of the answer. */
  sample: z.string().optional(),
  error: z.string().optional(),
});

// ---------------------------------------------------------------- pipelines

export const ExtensionsPreferences = z.object({
  enable_all_mcp_servers: z.boolean().default(true),
  mcp_servers: z.array(z.string().min(1).max(200)).max(256).default([]),
  enable_all_plugins: z.boolean().default(true),
  plugins: z.array(z.string().min(1).max(200)).max(256).default([]),
  /** LangBot's skill binding: every installed skill (the default), or only those in `skills`. */
  enable_all_skills: z.boolean().default(true),
  skills: z.array(SkillName).max(256).default([]),
});
/**
 * The preferences as written: `enable_all_mcp_servers` left out is decided by the write (a new
 * pipeline gets false and opts into servers through `mcp_servers`; an update keeps the stored value).
 * `enable_all_skills` and `skills` left out keep what is stored (all skills for a new pipeline), so a
 * client that does not know skills changes no pipeline's binding.
 */
export const ExtensionsPreferencesInput = ExtensionsPreferences.extend({
  enable_all_mcp_servers: z.boolean().optional(),
  enable_all_skills: z.boolean().optional(),
  skills: z.array(SkillName).max(256).optional(),
});

export const Pipeline = z.object({
  id: z.string(),
  name: z.string(),
  /** LangBot stage names, in order. */
  stages: z.array(z.string()),
  /** LangBot's pipeline config (`trigger`, `safety`, `ai`, `output`), defaults applied; external runners' secrets masked. */
  config: JsonRecord,
  extensionsPreferences: ExtensionsPreferences,
  /** Bots routed to this pipeline (a pipeline in use cannot be deleted). */
  botIds: z.array(z.string()),
  ...ResourceMeta,
});
export type Pipeline = z.infer<typeof Pipeline>;

/** POST /pipelines. `config` is any subset of LangBot's config; defaults fill the rest. */
export const PipelineCreate = z.strictObject({
  id: Id,
  name: Name.optional(),
  stages: z.array(z.string()).min(1).max(64).optional(),
  config: JsonRecord.default({}),
  extensionsPreferences: ExtensionsPreferencesInput.optional(),
});
/** PATCH /pipelines/:id: `config` replaces the whole config (defaults fill what it leaves out). */
export const PipelineUpdate = z.strictObject({
  name: Name.optional(),
  stages: z.array(z.string()).min(1).max(64).optional(),
  config: JsonRecord.optional(),
  extensionsPreferences: ExtensionsPreferencesInput.optional(),
  version: Version.optional(),
});
/** POST /pipelines/:id/copy: a new pipeline with the same stages, config and preferences. */
export const PipelineCopy = z.strictObject({ id: Id, name: Name.optional() });
/** POST /pipelines/validate: checks without saving. */
export const PipelineValidate = z.strictObject({ stages: z.array(z.string()).max(64).optional(), config: JsonRecord });
export const PipelineValidation = z.object({
  valid: z.boolean(),
  /** Key paths are relative to the body (`config.ai.runner.runner`). */
  issues: z.array(AdminIssue),
  /** The config with defaults applied, when valid. */
  config: JsonRecord.optional(),
});

// ---------------------------------------------------------------- bots

/** A platform's adapter name; the admin API checks it against the platform registry. */
export const BotAdapter = AdapterName;

/** The platforms a bot can be configured with (`GET /platforms`), from the platform registry. */
/**
 * The adapters a bot may have. `configSchema` is the JSON Schema of the bot's settings (the platform's
 * own schema; a secret field carries `secret: true` and comes back masked); `webhook`: the platform
 * posts to the ingress; `connection`: the gateway holds a connection for it (some platforms do either,
 * by their settings).
 */
export const PlatformList = z.object({
  items: z.array(z.object({ name: AdapterName, configSchema: JsonRecord, webhook: z.boolean(), connection: z.boolean() })),
});
export type PlatformList = z.infer<typeof PlatformList>;

/**
 * A bot's `humanHandoff` as the API shows and takes it: `webhookUrl` is a secret (a chat tool's
 * incoming-webhook URL is its own key), masked in answers; a masked value sent back keeps the stored URL.
 */
export const BotHumanHandoff = HumanHandoff.extend({ webhookUrl: z.string().max(2_000).nullable().default(null) });
export type BotHumanHandoff = z.output<typeof BotHumanHandoff>;

export const Bot = z.object({
  id: z.string(),
  name: z.string(),
  adapter: z.string(),
  /** The platform's secret fields (and undeclared secret-looking keys) masked (see SECRET_MASK_PREFIX). */
  adapterConfig: JsonRecord,
  pipelineId: z.string(),
  enabled: z.boolean(),
  /** How a chat of this bot asks for a person; null: it cannot. */
  humanHandoff: BotHumanHandoff.nullable(),
  ...ResourceMeta,
});
export type Bot = z.infer<typeof Bot>;

/** POST /bots; `id` (a UUID) is generated when left out. */
export const BotCreate = z.strictObject({
  id: z.uuid().optional(),
  name: Name,
  adapter: BotAdapter,
  adapterConfig: JsonRecord.default({}),
  pipelineId: Id,
  enabled: z.boolean().default(true),
  humanHandoff: BotHumanHandoff.nullable().default(null),
});
/** PATCH /bots/:id. `enabled` switches the bot on and off; `humanHandoff: null` turns requests for a person off. */
export const BotUpdate = z.strictObject({
  name: Name.optional(),
  adapterConfig: JsonRecord.optional(),
  pipelineId: Id.optional(),
  enabled: z.boolean().optional(),
  humanHandoff: BotHumanHandoff.nullable().optional(),
  version: Version.optional(),
});

// ---------------------------------------------------------------- MCP servers

export const McpTransport = z.enum(['stdio', 'http', 'sse']);

export const McpServer = z.object({
  id: z.string(),
  name: z.string(),
  transport: z.string(),
  /** Every `env` value masked, and secret-looking keys elsewhere (headers). */
  config: JsonRecord,
  enabled: z.boolean(),
  ...ResourceMeta,
});
export type McpServer = z.infer<typeof McpServer>;

/** POST /mcp-servers. */
export const McpServerCreate = z.strictObject({ id: Id, name: Name.optional(), transport: McpTransport, config: JsonRecord.default({}), enabled: z.boolean().default(true) });
/** PATCH /mcp-servers/:id. */
export const McpServerUpdate = z.strictObject({
  name: Name.optional(),
  transport: McpTransport.optional(),
  config: JsonRecord.optional(),
  enabled: z.boolean().optional(),
  version: Version.optional(),
});
/** POST /mcp-servers/:id/test: connect and list the tools (http and sse only; stdio is not started by the admin). */
export const McpServerTestResult = z.object({ ok: z.boolean(), latencyMs: z.number(), tools: z.array(z.string()).optional(), error: z.string().optional() });

// ---------------------------------------------------------------- instance settings

/** The id of the one instance settings row (also the `id` of its `config.changed` events). */
export const INSTANCE_SETTINGS_ID = 'instance';

const compiles = (pattern: string) => {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
};

/** LangBot's sensitive-words (data/metadata/sensitive-words.json): each word a regular expression. */
export const BanWordsSetting = z.strictObject({
  words: z.array(z.string().min(1).max(200).refine(compiles, 'must be a valid regular expression')).max(64),
  /** Each character of a match is replaced by this (when `mask_word` is empty). */
  mask: z.string().max(8).default('*'),
  /** When set, a whole match is replaced by this instead. */
  mask_word: z.string().max(200).default(''),
});

/**
 * LangBot's config.yaml keys that matter at run time. `null` means "not set here": the services use their
 * own default (the orchestrator's COMMAND_ENABLE / COMMAND_PREFIX, the CONVEYOR_BAN_WORDS_FILE file).
 */
export const InstanceSettingsValues = z.strictObject({
  command: z.strictObject({
    /** `command.enable`: whether a message starting with a prefix is a command. */
    enable: z.boolean().nullable().default(null),
    /** `command.prefix`: what marks a command. */
    prefix: z.array(z.string().trim().min(1).max(16)).min(1).max(16).nullable().default(null),
    /**
     * The chats whose commands run with admin privilege (LangBot's bot admins), as `person:<id>` or
     * `group:<id>` (in a group, the group counts, as in LangBot), for every bot.
     */
    admins: z.array(z.string().regex(/^(person|group):.{1,500}$/, 'a chat is person:<id> or group:<id>')).max(1_000).nullable().default(null),
  }).default({ enable: null, prefix: null, admins: null }),
  banWords: BanWordsSetting.nullable().default(null),
  monitoring: z.strictObject({
    /** Whether the console's sessions page shows what was said (message text); null or false: it shows roles, times and sizes only. */
    showMessageText: z.boolean().nullable().default(null),
  }).default({ showMessageText: null }),
});
export type InstanceSettingsValues = z.output<typeof InstanceSettingsValues>;

/** The stored values read back; a value that no longer validates (a hand-edited row) counts as not set. */
export function storedSettings(raw: unknown): InstanceSettingsValues {
  const parsed = InstanceSettingsValues.safeParse(raw);
  return parsed.success ? parsed.data : InstanceSettingsValues.parse({});
}

/** GET /settings (viewer). */
export const InstanceSettings = InstanceSettingsValues.extend({ version: Version, updatedAt: Timestamp });
export type InstanceSettings = z.infer<typeof InstanceSettings>;
/** PUT /settings (admin): replaces all values (`null` or left out: back to the service default). */
export const InstanceSettingsUpdate = InstanceSettingsValues.extend({ version: Version.optional() });
export type InstanceSettingsUpdateInput = z.output<typeof InstanceSettingsUpdate>;

// ---------------------------------------------------------------- query log

export const QueryStatus = z.enum(['accepted', 'running', 'succeeded', 'failed']);

/** GET /queries: newest first. `from`/`to` bound `receivedAt` (ISO time). */
export const QueryLogFilter = PageQuery.extend({
  botId: z.string().max(200).optional(),
  /** A session: `launcherType` (`person`/`group`) and `launcherId`. */
  launcherType: z.string().max(50).optional(),
  launcherId: z.string().max(500).optional(),
  status: QueryStatus.optional(),
  from: Timestamp.optional(),
  to: Timestamp.optional(),
});
export type QueryLogFilter = z.infer<typeof QueryLogFilter>;

export const QueryLogEntry = z.object({
  id: z.string(),
  botId: z.string(),
  pipelineId: z.string().nullable(),
  launcherType: z.string(),
  launcherId: z.string(),
  status: z.string(),
  receivedAt: Timestamp,
  startedAt: Timestamp.nullable(),
  finishedAt: Timestamp.nullable(),
  error: z.string().nullable(),
  traceId: z.string().nullable(),
  /** Whether the trace was sampled, so the tracing backend has it; null where the record predates this being stored. */
  traceSampled: z.boolean().nullable(),
  attempt: z.number().int(),
  mergedInto: z.string().nullable(),
  /** The LlmModel that answered and the runner, with the run's model calls, tokens and cost (null before the run ended or without a runner). */
  model: z.string().nullable(),
  runner: z.string().nullable(),
  modelCalls: z.number().int().nullable(),
  inputTokens: z.number().int().nullable(),
  outputTokens: z.number().int().nullable(),
  cost: z.number().nullable(),
});
export type QueryLogEntry = z.infer<typeof QueryLogEntry>;

// ---------------------------------------------------------------- monitoring

export const MonitoringRangeName = z.enum(['1h', '24h', '7d', '30d', 'custom']);
/**
 * A time range of the monitoring routes: a named range ending now, or `custom` with `from` and `to`
 * (at most 90 days apart). Optional filters narrow it to a bot, pipeline or model.
 */
export const MonitoringRange = z.strictObject({
  range: MonitoringRangeName.default('24h'),
  from: Timestamp.optional(),
  to: Timestamp.optional(),
  botId: z.string().max(200).optional(),
  pipelineId: z.string().max(200).optional(),
  model: z.string().max(200).optional(),
});
export type MonitoringRangeInput = z.output<typeof MonitoringRange>;

/** Counts of one group (a bot, pipeline, model or time bucket). `cost` is null when no query in it had a priced model. */
export const MonitoringTotals = z.object({
  messages: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  modelCalls: z.number().int(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cost: z.number().nullable(),
  /** Median and 95th percentile of receivedAt → finishedAt over the finished queries, in milliseconds. */
  p50Ms: z.number().nullable(),
  p95Ms: z.number().nullable(),
});
export const MonitoringGroup = MonitoringTotals.extend({ key: z.string() });
export const MonitoringBucket = MonitoringTotals.extend({ start: Timestamp });
/** GET /monitoring/summary (viewer): totals, per bot, pipeline and model, and a time series in buckets of `bucketSeconds`. */
export const MonitoringSummary = z.object({
  from: Timestamp,
  to: Timestamp,
  bucketSeconds: z.number().int(),
  totals: MonitoringTotals,
  byBot: z.array(MonitoringGroup),
  byPipeline: z.array(MonitoringGroup),
  byModel: z.array(MonitoringGroup),
  series: z.array(MonitoringBucket),
});
export type MonitoringSummary = z.infer<typeof MonitoringSummary>;

/** GET /monitoring/errors (viewer): the range's failed queries, newest first, paged. */
export const MonitoringErrorFilter = MonitoringRange.extend({ cursor: z.string().max(200).optional(), limit: z.coerce.number().int().min(1).max(200).default(50) });
export type MonitoringErrorFilterInput = z.output<typeof MonitoringErrorFilter>;

/** One chat (bot, launcher) with its conversations' count and last activity. */
export const MonitoringSession = z.object({
  botId: z.string(),
  launcherType: z.string(),
  launcherId: z.string(),
  conversations: z.number().int(),
  messages: z.number().int(),
  lastActivityAt: Timestamp,
});
/** GET /monitoring/sessions (viewer): chats active in the range, most recent first. `cursor`: the page's offset. */
export const MonitoringSessionFilter = z.strictObject({
  range: MonitoringRangeName.default('7d'),
  from: Timestamp.optional(),
  to: Timestamp.optional(),
  botId: z.string().max(200).optional(),
  cursor: z.string().regex(/^\d{1,7}$/).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type MonitoringSessionFilterInput = z.output<typeof MonitoringSessionFilter>;
export const MonitoringSessionPage = z.object({ items: z.array(MonitoringSession), nextCursor: z.string().nullable() });

/** A message of a conversation: its text only when the instance setting `monitoring.showMessageText` is on. */
export const ConversationMessageView = z.object({
  seq: z.number().int(),
  role: z.string(),
  at: Timestamp,
  /** Characters of the message's text (tool calls excluded). */
  chars: z.number().int(),
  text: z.string().nullable(),
  toolCalls: z.array(z.string()),
});
export const ConversationView = z.object({
  id: z.string(),
  pipelineId: z.string(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  archivedAt: Timestamp.nullable(),
  messages: z.array(ConversationMessageView),
});
/** GET /monitoring/sessions/conversations?botId&launcherType&launcherId (viewer): the chat's newest conversations, with their messages (at most 200 each). */
export const SessionConversationsFilter = z.strictObject({ botId: z.string().min(1).max(200), launcherType: z.string().min(1).max(50), launcherId: z.string().min(1).max(500) });
export const SessionConversations = z.object({ textShown: z.boolean(), conversations: z.array(ConversationView) });
export type SessionConversations = z.infer<typeof SessionConversations>;

// ---------------------------------------------------------------- live conversations

/** A chat with traffic lately, as the bus shows it to an admin replica. */
export const LiveSession = z.object({
  botId: z.string(),
  adapter: z.string(),
  launcherType: z.string(),
  launcherId: z.string(),
  /** The sender's name of the last user message. */
  senderName: z.string(),
  /** The last user message's text (null unless `monitoring.showMessageText` is on) and its length. */
  lastMessage: z.string().nullable(),
  lastMessageChars: z.number().int(),
  lastActivityAt: Timestamp,
  /** Whether a reply is being produced or sent now. */
  replying: z.boolean(),
  /** The operator answering this chat instead of the bot; null when the bot does. */
  takenOverBy: z.string().nullable(),
  /** Since when the chat waits for a person (it asked; no operator took it yet); null when it does not. */
  waitingSince: Timestamp.nullable(),
});
export type LiveSession = z.infer<typeof LiveSession>;

/**
 * One line of a live transcript: a user message, or the bot's reply to it as it streams (`final` once
 * it is whole), a notice or an error. Text only when `monitoring.showMessageText` is on.
 */
export const LiveEntry = z.object({
  /** Stable per line: a streamed reply is sent again under its id as it grows. */
  id: z.string(),
  queryId: z.string(),
  role: z.enum(['user', 'bot', 'operator', 'notice', 'error']),
  at: Timestamp,
  text: z.string().nullable(),
  chars: z.number().int(),
  final: z.boolean(),
});
export type LiveEntry = z.infer<typeof LiveEntry>;

/** GET /live/transcript?botId&launcherType&launcherId (server-sent events): the chat whose transcript to follow. */
export const LiveTranscriptFilter = SessionConversationsFilter;

/** What the live streams send: the whole state first (`snapshot`), then each change. */
export const LiveSessionsSnapshot = z.object({ textShown: z.boolean(), sessions: z.array(LiveSession) });
export type LiveSessionsSnapshot = z.infer<typeof LiveSessionsSnapshot>;
export const LiveTranscriptSnapshot = z.object({ textShown: z.boolean(), session: LiveSession.nullable(), entries: z.array(LiveEntry) });
export type LiveTranscriptSnapshot = z.infer<typeof LiveTranscriptSnapshot>;

// ---------------------------------------------------------------- human takeover

/** A chat an operator answers instead of the bot. */
export const Takeover = z.object({
  botId: z.string(),
  launcherType: z.string(),
  launcherId: z.string(),
  /** Who took it (the audit name). */
  operator: z.string(),
  since: Timestamp,
  /** The operator's last reply (or the takeover itself). */
  lastOperatorAt: Timestamp,
  /** When it returns to the bot without another reply; null: only when handed back. */
  returnsAt: Timestamp.nullable(),
});
export type Takeover = z.infer<typeof Takeover>;
export const TakeoverList = z.object({ items: z.array(Takeover) });
export type TakeoverList = z.infer<typeof TakeoverList>;

/** POST /takeovers: take a chat over; `idleMinutes` returns it after that long without a reply. */
export const TakeoverCreate = z.strictObject({
  botId: z.string().min(1).max(200),
  launcherType: z.enum(['person', 'group']),
  launcherId: z.string().min(1).max(1000),
  idleMinutes: z.number().int().min(1).max(24 * 60).nullable().default(30),
});
export type TakeoverCreateInput = z.output<typeof TakeoverCreate>;

/** POST /takeovers/reply: a message from the operator to the taken chat, sent as the bot. */
export const OperatorReply = z.strictObject({
  botId: z.string().min(1).max(200),
  launcherType: z.enum(['person', 'group']),
  launcherId: z.string().min(1).max(1000),
  text: z.string().trim().min(1).max(4_000),
});
export type OperatorReplyInput = z.output<typeof OperatorReply>;

/** DELETE /takeovers?botId&launcherType&launcherId: hand the chat back to the bot. */
export const TakeoverTarget = z.strictObject({
  botId: z.string().min(1).max(200),
  launcherType: z.enum(['person', 'group']),
  launcherId: z.string().min(1).max(1000),
});

/** A chat that asked for a person and waits for an operator to take it over. */
export const HumanRequest = z.object({
  botId: z.string(),
  launcherType: z.string(),
  launcherId: z.string(),
  via: HumanRequestVia,
  /** The user's message (keyword) or the model's reason (tool); null unless `monitoring.showMessageText` is on. */
  reason: z.string().nullable(),
  requestedAt: Timestamp,
});
export type HumanRequest = z.infer<typeof HumanRequest>;
/** GET /human-requests: the chats waiting for a person, oldest first. */
export const HumanRequestList = z.object({ items: z.array(HumanRequest) });
export type HumanRequestList = z.infer<typeof HumanRequestList>;

/** One step of a query's timeline: `offsetMs` after the message was received, `ms` long. */
export const TimelineStep = z.object({ stage: z.string(), offsetMs: z.number(), ms: z.number() });
/** GET /queries/:id/timeline (viewer): queue wait, the orchestrator's stages and the run, as recorded. */
export const QueryTimeline = z.object({ id: z.string(), receivedAt: Timestamp, finishedAt: Timestamp.nullable(), totalMs: z.number().nullable(), steps: z.array(TimelineStep) });
export type QueryTimeline = z.infer<typeof QueryTimeline>;

// ---------------------------------------------------------------- dead letters

/** GET /dead-letters: oldest first; `cursor` is a stream sequence. GET /dead-letters/:seq one. */
export const DeadLetterFilter = PageQuery.extend({ source: z.string().max(200).optional() });
export const DeadLetterEntry = z.object({
  /** Its sequence in the dead-letter stream: the id for resubmit and discard. */
  seq: z.number().int(),
  source: z.string(),
  stream: z.string(),
  subject: z.string(),
  deliveryCount: z.number().int(),
  reason: z.string(),
  error: z.string(),
  payloadBase64: z.string(),
  payloadTruncated: z.boolean(),
  traceId: z.string().optional(),
  failedAt: Timestamp,
});
export type DeadLetterEntry = z.infer<typeof DeadLetterEntry>;
/** POST /dead-letters/:seq/resubmit: publishes the payload to its original subject again and removes the dead letter (a truncated payload is refused). DELETE /dead-letters/:seq discards. */
export const DeadLetterResubmitted = z.object({ seq: z.number().int(), subject: z.string(), streamSeq: z.number().int() });

// ---------------------------------------------------------------- bot endpoints and plugins

/** A held connection's lease, as the gateway keeps it in Redis. */
export const BotConnection = z.object({
  /** `held`: a gateway replica holds the connection (its lease is live); `not_held`: none does now. */
  state: z.enum(['held', 'not_held']),
  /** The gateway replica holding it (its lease owner), or null. */
  holder: z.string().nullable(),
  /** Until the lease lapses unless its holder renews it. */
  leaseExpiresInMs: z.number().int().nullable(),
  /** Whether the holder left state for the next holder to resume with (Discord's session). */
  resumable: z.boolean(),
});
export type BotConnection = z.infer<typeof BotConnection>;

/** GET /bots/:id/endpoint: where the platform reaches the bot. */
export const BotEndpoint = z.object({
  botId: z.string(),
  adapter: z.string(),
  /** The ingress path of the bot's webhook; null when the platform has no webhook. */
  webhookPath: z.string().nullable(),
  /** The URL to paste into the platform: INGRESS_PUBLIC_URL and the path; null when that is unset or there is no webhook. */
  webhookUrl: z.string().nullable(),
  /** Whether the bot's settings make the gateway hold a connection for it. */
  gatewayHeld: z.boolean(),
  /** The connection's lease; null when the gateway holds none for this bot. */
  connection: BotConnection.nullable(),
});
export type BotEndpoint = z.infer<typeof BotEndpoint>;

/** A plugin as its heartbeats announce it to the admin service. */
export const RegisteredPlugin = z.object({
  name: z.string(),
  version: z.string().nullable(),
  events: z.array(z.string()),
  /** The tools it offers the local agent, by name. */
  tools: z.array(z.string()),
  /** The `!`-commands it offers, by name. */
  commands: z.array(z.string()),
  /** The knowledge retrievers it offers, by name (a knowledge base may be backed by one). */
  retrievers: z.array(z.string()),
  /** Calls to it over the last hour from every service, cluster-wide: how many, how many failed, their mean time (null without calls). */
  lastHour: z.object({ calls: z.number().int(), errors: z.number().int(), meanMs: z.number().int().nullable() }),
  priority: z.number().int(),
  timeoutMs: z.number().int(),
  lastHeartbeatAt: Timestamp,
  /** The registration lapses then unless another heartbeat comes. */
  expiresAt: Timestamp,
  /** Pipelines whose extensions preferences bind it (all plugins, or this one by name). */
  pipelines: z.array(z.string()),
  /** Whether it declares settings an admin fills in (GET /plugins/:name/settings). */
  hasSettings: z.boolean(),
});
export type RegisteredPlugin = z.infer<typeof RegisteredPlugin>;

/** A plugin's settings values for one scope, secrets masked. */
export const PluginSettingsScope = z.object({
  /** null: the installation's (every pipeline); else the pipeline whose values go over them. */
  pipelineId: z.string().nullable(),
  values: z.record(z.string(), z.unknown()),
  version: z.number().int(),
  updatedAt: Timestamp,
});
export type PluginSettingsScope = z.infer<typeof PluginSettingsScope>;

/** GET /plugins/:name/settings: the schema the live plugin announces and the stored values. */
export const PluginSettings = z.object({
  name: z.string(),
  /** JSON Schema of the settings; a property with `writeOnly: true` or `format: "password"` is a secret. */
  schema: z.record(z.string(), z.unknown()),
  /** The installation's values, then each pipeline's that has any. */
  scopes: z.array(PluginSettingsScope),
  /** Pipelines binding the plugin: the ones that may have values of their own. */
  pipelines: z.array(z.string()),
});
export type PluginSettings = z.infer<typeof PluginSettings>;

/**
 * PUT /plugins/:name/settings: the values of one scope, whole (a key left out is removed), checked
 * against the plugin's schema; a masked secret sent back keeps the stored one. `version` (from GET;
 * 0 for a scope with no values yet) guards against a concurrent change.
 */
export const PluginSettingsUpdate = z.strictObject({
  pipelineId: z.string().min(1).max(200).nullable().default(null),
  values: z.record(z.string(), z.unknown()),
  version: z.number().int().min(0),
});
export type PluginSettingsUpdateInput = z.output<typeof PluginSettingsUpdate>;
export const PluginList = z.object({ items: z.array(RegisteredPlugin) });
export type PluginList = z.infer<typeof PluginList>;

// ---------------------------------------------------------------- knowledge bases

const KnowledgeDocumentType = z.enum(['text', 'markdown', 'pdf', 'docx', 'html', 'xlsx', 'epub']);
/** `pending` (waiting for a runner), `processing` (being chunked and embedded), `done` (searchable), `failed` (`error` says why). */
export const KnowledgeDocumentStatus = z.enum(['pending', 'processing', 'done', 'failed']);
export type KnowledgeDocumentStatus = z.infer<typeof KnowledgeDocumentStatus>;
/** The multipart field an upload carries the file in (POST /knowledge-bases/:id/documents). */
export const KNOWLEDGE_UPLOAD_FIELD = 'file';

export const KnowledgeDocument = z.object({
  id: z.string(),
  knowledgeBaseId: z.string(),
  /** The file name it was uploaded under; a later upload of the same name replaces its content. */
  name: z.string(),
  type: KnowledgeDocumentType,
  status: KnowledgeDocumentStatus,
  /** Percent of the chunks embedded. */
  progress: z.number().int(),
  error: z.string().nullable(),
  /** Raised by new content and by a re-index; a job for an older revision is dropped. */
  revision: z.number().int(),
  bytes: z.number().int(),
  chunks: z.number().int(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type KnowledgeDocument = z.infer<typeof KnowledgeDocument>;

/** `vector`: by embedding; `fulltext`: by terms (CJK text as bigrams); `hybrid`: both, fused by reciprocal rank. */
export const KnowledgeRetrievalMode = z.enum(['vector', 'fulltext', 'hybrid']);
export type KnowledgeRetrievalMode = z.infer<typeof KnowledgeRetrievalMode>;

export const KnowledgeBase = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  embeddingModelId: z.string(),
  topK: z.number().int(),
  chunkSize: z.number().int(),
  chunkOverlap: z.number().int(),
  rerankModelId: z.string().nullable(),
  retrievalMode: KnowledgeRetrievalMode,
  /** The plugin retriever backing it instead of documents (its embedding model and chunking then unused). */
  retriever: z.object({ plugin: z.string(), name: z.string() }).nullable(),
  /** Its documents by status. */
  documents: z.object({ pending: z.number().int(), processing: z.number().int(), done: z.number().int(), failed: z.number().int() }),
  chunks: z.number().int(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type KnowledgeBase = z.infer<typeof KnowledgeBase>;

/** POST /knowledge-bases: the bounds conveyor.yaml's `knowledgeBases` have. */
export const KnowledgeBaseCreate = z.strictObject({
  id: Id,
  name: Name,
  description: z.string().max(2_000).default(''),
  /** An LlmModel with the `embedding` ability; not for a knowledge base backed by a plugin's retriever. */
  embeddingModelId: Id.optional(),
  /** A live plugin's retriever that backs the knowledge base instead of documents (LangBot's external knowledge base). */
  retriever: z.strictObject({ plugin: z.string().min(3).max(129), name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }).optional(),
  topK: z.number().int().min(1).max(64).default(5),
  chunkSize: z.number().int().min(1).max(100_000).default(512),
  chunkOverlap: z.number().int().min(0).max(99_999).default(50),
  /** An LlmModel with the `rerank` ability, used when a pipeline names none. */
  rerankModelId: Id.optional(),
  retrievalMode: KnowledgeRetrievalMode.default('hybrid'),
}).refine((kb) => kb.chunkOverlap < kb.chunkSize, { message: 'chunkOverlap must be less than chunkSize', path: ['chunkOverlap'] })
  .refine((kb) => (kb.embeddingModelId === undefined) !== (kb.retriever === undefined), { message: 'name an embeddingModelId (a knowledge base of documents) or a retriever (one backed by a plugin), not both', path: ['embeddingModelId'] });
export type KnowledgeBaseCreateInput = z.output<typeof KnowledgeBaseCreate>;

/**
 * PATCH /knowledge-bases/:id: the fields given. A new embedding model, chunk size or overlap ingests
 * every document again (each goes back to `pending`; until then the knowledge base has fewer chunks).
 * `rerankModelId: null` removes the rerank model.
 */
export const KnowledgeBaseUpdate = z.strictObject({
  name: Name.optional(),
  description: z.string().max(2_000).optional(),
  topK: z.number().int().min(1).max(64).optional(),
  /** An LlmModel with the `rerank` ability, or null for none. */
  rerankModelId: Id.nullable().optional(),
  retrievalMode: KnowledgeRetrievalMode.optional(),
  /** An LlmModel with the `embedding` ability. */
  embeddingModelId: Id.optional(),
  chunkSize: z.number().int().min(1).max(100_000).optional(),
  chunkOverlap: z.number().int().min(0).max(99_999).optional(),
}).refine((kb) => Object.keys(kb).length > 0, { message: 'name at least one of name, description, topK, rerankModelId, retrievalMode, embeddingModelId, chunkSize, chunkOverlap' });
export type KnowledgeBaseUpdateInput = z.output<typeof KnowledgeBaseUpdate>;

/** What an upload did: a new document, new content under an existing name, or nothing (the same bytes). */
export const KnowledgeDocumentUploaded = z.object({ outcome: z.enum(['created', 'replaced', 'unchanged']), document: KnowledgeDocument });
export type KnowledgeDocumentUploaded = z.infer<typeof KnowledgeDocumentUploaded>;

// ---------------------------------------------------------------- skills and sandbox workspaces

/** An installed Agent Skill (a `SKILL.md` folder), without its files. */
export const Skill = z.object({
  name: SkillName,
  /** The front matter's description: what the model chooses the skill by. */
  description: z.string(),
  files: z.number().int(),
  /** Bytes of its files, unpacked. */
  bytes: z.number().int(),
  /** 1 when installed, +1 with every replacement; sandbox replicas unpack a newer one again. */
  revision: z.number().int(),
  /** `file` (conveyor.yaml's `skills`) or `console` (uploaded, or saved from a workspace). */
  managedBy: ManagedBy,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Skill = z.infer<typeof Skill>;

export const SkillFile = z.object({ path: z.string(), bytes: z.number().int() });
export type SkillFile = z.infer<typeof SkillFile>;

/** GET /skills/:name: the skill, its files with their sizes, and its SKILL.md as written. */
export const SkillDetail = Skill.extend({
  /** SKILL.md after its front matter: what the model reads when it activates the skill. */
  instructions: z.string(),
  skillMd: z.string(),
  fileList: z.array(SkillFile),
});
export type SkillDetail = z.infer<typeof SkillDetail>;

/** The content type of POST /skills: the skill's folder (or the folder's contents) as a zip. */
export const SKILL_UPLOAD_CONTENT_TYPE = 'application/zip';

/** What an install did: a new skill (201), or a new revision of one of the same name (200). */
export const SkillInstalled = z.object({ outcome: z.enum(['created', 'replaced']), skill: Skill });
export type SkillInstalled = z.infer<typeof SkillInstalled>;

/**
 * POST /skills/from-workspace: a folder the agent wrote in a sandbox workspace, installed as a skill.
 * `path` is under `/workspace` (`/workspace/my-skill`, or `my-skill`).
 */
export const SkillFromWorkspace = z.strictObject({
  workspace: WorkspaceId,
  path: z.string().trim().min(1).max(4096),
});
export type SkillFromWorkspaceInput = z.output<typeof SkillFromWorkspace>;

/** A sandbox workspace as stored (its files are not listed). */
export const SandboxWorkspace = z.object({
  /** The pipeline id, then the rendered `box-session-id-template`. */
  id: z.string(),
  /** Bytes and files of the unpacked workspace. */
  bytes: z.number().int(),
  files: z.number().int(),
  revision: z.number().int(),
  lastUsedAt: Timestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type SandboxWorkspace = z.infer<typeof SandboxWorkspace>;

// ---------------------------------------------------------------- audit

export const AuditResource = z.enum(['model', 'pipeline', 'bot', 'mcp-server', 'user', 'api-token', 'dead-letter', 'session', 'settings', 'knowledge-base', 'skill', 'sandbox-workspace', 'mcp-tool', 'plugin', 'plugin-host', 'session-takeover', 'human-request']);
export const AuditEntry = z.object({
  id: z.string(),
  at: Timestamp,
  /** `user:<name>` or `token:<id>` (`system` for setup). */
  actor: z.string(),
  resource: AuditResource,
  resourceId: z.string(),
  /** `create`, `update`, `delete`, `copy`, `resubmit`, `discard`, `login`, `revoke`, ... */
  action: z.string(),
  versionBefore: z.number().int().nullable(),
  versionAfter: z.number().int().nullable(),
  /** Which fields changed (names only, never values of secrets). */
  changes: z.array(z.string()),
});
export type AuditEntry = z.infer<typeof AuditEntry>;
/** GET /audit (admin): newest first. */
export const AuditFilter = PageQuery.extend({ resource: AuditResource.optional(), resourceId: z.string().max(200).optional(), actor: z.string().max(200).optional() });

// ---------------------------------------------------------------- route table

/**
 * Every route and who may call it (paths relative to ADMIN_API_BASE), for the README, the OpenAPI
 * document and the console. The service's live route table (GET /routes) must list exactly these with
 * the same access; a fourth element `session` marks a route an API token may not call.
 */
export const ADMIN_ROUTES = [
  ['GET', '/auth/status', 'public'],
  ['POST', '/auth/setup', 'public'],
  ['POST', '/auth/login', 'public'],
  ['POST', '/auth/logout', 'viewer'],
  ['GET', '/auth/me', 'viewer'],
  ['GET', '/users', 'admin'],
  ['POST', '/users', 'admin'],
  ['PATCH', '/users/:username', 'admin'],
  ['DELETE', '/users/:username', 'admin'],
  ['GET', '/tokens', 'admin'],
  ['POST', '/tokens', 'admin', 'session'],
  ['DELETE', '/tokens/:id', 'admin'],
  ['GET', '/models', 'viewer'],
  ['GET', '/models/:id', 'viewer'],
  ['POST', '/models', 'admin'],
  ['PATCH', '/models/:id', 'admin'],
  ['DELETE', '/models/:id', 'admin'],
  ['POST', '/models/:id/test', 'admin'],
  ['GET', '/model-presets', 'viewer'],
  ['GET', '/pipelines', 'viewer'],
  ['GET', '/pipelines/:id', 'viewer'],
  ['POST', '/pipelines', 'admin'],
  ['POST', '/pipelines/validate', 'viewer'],
  ['PATCH', '/pipelines/:id', 'admin'],
  ['DELETE', '/pipelines/:id', 'admin'],
  ['POST', '/pipelines/:id/copy', 'admin'],
  ['GET', '/bots', 'viewer'],
  ['GET', '/bots/:id', 'viewer'],
  ['POST', '/bots', 'admin'],
  ['PATCH', '/bots/:id', 'admin'],
  ['DELETE', '/bots/:id', 'admin'],
  ['GET', '/mcp-servers', 'viewer'],
  ['GET', '/mcp-servers/:id', 'viewer'],
  ['POST', '/mcp-servers', 'admin'],
  ['PATCH', '/mcp-servers/:id', 'admin'],
  ['DELETE', '/mcp-servers/:id', 'admin'],
  ['POST', '/mcp-servers/:id/test', 'admin'],
  ['GET', '/queries', 'viewer'],
  ['GET', '/queries/:id', 'viewer'],
  ['GET', '/queries/:id/timeline', 'viewer'],
  ['GET', '/monitoring/queries.csv', 'viewer'],
  ['GET', '/monitoring/summary', 'viewer'],
  ['GET', '/monitoring/errors', 'viewer'],
  ['GET', '/monitoring/sessions', 'viewer'],
  ['GET', '/monitoring/sessions/conversations', 'viewer'],
  ['GET', '/dead-letters', 'viewer'],
  ['GET', '/dead-letters/:seq', 'viewer'],
  ['POST', '/dead-letters/:seq/resubmit', 'admin'],
  ['DELETE', '/dead-letters/:seq', 'admin'],
  ['GET', '/audit', 'admin'],
  ['GET', '/settings', 'viewer'],
  ['PUT', '/settings', 'admin'],
  ['GET', '/platforms', 'viewer'],
  ['GET', '/debug-chat/bots/:botId/session/events', 'viewer'],
  ['POST', '/debug-chat/bots/:botId/session/messages', 'admin'],
  ['POST', '/debug-chat/bots/:botId/session/reset', 'admin'],
  ['GET', '/routes', 'admin'],
  ['GET', '/knowledge-bases', 'viewer'],
  ['GET', '/knowledge-bases/:id', 'viewer'],
  ['POST', '/knowledge-bases', 'admin'],
  ['PATCH', '/knowledge-bases/:id', 'admin'],
  ['DELETE', '/knowledge-bases/:id', 'admin'],
  ['GET', '/knowledge-bases/:id/documents', 'viewer'],
  ['POST', '/knowledge-bases/:id/documents', 'admin'],
  ['POST', '/knowledge-bases/:id/documents/:documentId/reindex', 'admin'],
  ['DELETE', '/knowledge-bases/:id/documents/:documentId', 'admin'],
  ['GET', '/bots/:id/endpoint', 'viewer'],
  ['GET', '/plugins', 'viewer'],
  ['GET', '/plugins/:name/settings', 'viewer'],
  ['PUT', '/plugins/:name/settings', 'admin'],
  ['GET', '/live/sessions', 'viewer'],
  ['GET', '/live/transcript', 'viewer'],
  ['GET', '/takeovers', 'viewer'],
  ['POST', '/takeovers', 'admin'],
  ['POST', '/takeovers/reply', 'admin'],
  ['DELETE', '/takeovers', 'admin'],
  ['GET', '/human-requests', 'viewer'],
  ['DELETE', '/human-requests', 'admin'],
  ['GET', '/skills', 'viewer'],
  ['GET', '/skills/:name', 'viewer'],
  ['POST', '/skills', 'admin'],
  ['POST', '/skills/from-workspace', 'admin'],
  ['DELETE', '/skills/:name', 'admin'],
  ['GET', '/sandbox/workspaces', 'viewer'],
  ['DELETE', '/sandbox/workspaces/:id', 'admin'],
  // The admin API as an MCP server: any signed-in caller; each tool needs its own route's role.
  ['POST', '/mcp', 'viewer'],
  ['GET', '/mcp', 'viewer'],
  ['DELETE', '/mcp', 'viewer'],
] as const;

/**
 * One entry of the live route table: each route and mount of the service's HTTP router, in the order
 * the router tries them. `access` is what the guard enforces (`public`, or the role needed);
 * `unguarded` is served before or beside the guard (the console's files, the OpenAPI document, the
 * body parser's mount), so it must never serve data. `USE` is a mount (every method, path prefix).
 */
export const RouteEntry = z.object({
  method: z.string(),
  path: z.string(),
  access: z.enum(['public', 'viewer', 'admin', 'unguarded']),
  sessionOnly: z.boolean(),
});
export type RouteEntry = z.infer<typeof RouteEntry>;
/** GET /routes (admin). */
export const RouteTable = z.object({ items: z.array(RouteEntry) });
export type RouteTable = z.infer<typeof RouteTable>;

// ---------------------------------------------------------------- parsed inputs

export type ModelCreateInput = z.output<typeof ModelCreate>;
export type ModelUpdateInput = z.output<typeof ModelUpdate>;
export type PipelineCreateInput = z.output<typeof PipelineCreate>;
export type PipelineUpdateInput = z.output<typeof PipelineUpdate>;
export type BotCreateInput = z.output<typeof BotCreate>;
export type BotUpdateInput = z.output<typeof BotUpdate>;
export type McpServerCreateInput = z.output<typeof McpServerCreate>;
export type McpServerUpdateInput = z.output<typeof McpServerUpdate>;
export type AuditFilterInput = z.output<typeof AuditFilter>;
export type DeadLetterFilterInput = z.output<typeof DeadLetterFilter>;
export type ApiTokenCreated = z.infer<typeof ApiTokenCreated>;
export type DeadLetterResubmitted = z.infer<typeof DeadLetterResubmitted>;
export type ModelTestResult = z.infer<typeof ModelTestResult>;
export type ModelPresetList = z.infer<typeof ModelPresetList>;
export type McpServerTestResult = z.infer<typeof McpServerTestResult>;
export type PipelineValidation = z.infer<typeof PipelineValidation>;
export type AuthStatus = z.infer<typeof AuthStatus>;
