// The shape of conveyor.yaml, checked after `${ENV}` interpolation. Objects are strict so a typo
// (or a secret pasted under an unknown key) is reported instead of silently ignored; values that
// may come from an env variable (numbers, booleans) also accept their string spelling.
import { HumanHandoff, MODEL_PRESET_IDS, ModelProviderKind, PluginName, SkillName } from '@conveyor/contracts';
import { DEFAULT_PIPELINE_STAGES } from '@conveyor/pipeline';
import { z } from 'zod';
import { platforms } from '@conveyor/platforms';

const Id = z.string().trim().min(1).max(200);
const Name = z.string().trim().min(1).max(200).optional();
const JsonRecord = z.record(z.string(), z.unknown());
const BooleanLike = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `embedding`: serves `/embeddings` for knowledge bases; `rerank`: serves a Jina/Cohere-style `/rerank`. */
export const MODEL_ABILITIES = ['func_call', 'vision', 'embedding', 'rerank'] as const;
export const MCP_TRANSPORTS = ['stdio', 'http', 'sse'] as const;
/** The adapters a bot may have: every registered platform a bot is configured with (not the web chat). */
export const BOT_ADAPTERS: readonly string[] = platforms.configurableNames();

export const ModelEntrySchema = z.strictObject({
  id: Id,
  name: Name,
  /** A service LangBot lists (MODEL_PRESETS): its provider, base URL and abilities, where the entry leaves them out. */
  preset: z.string().refine((id) => MODEL_PRESET_IDS.includes(id), { error: `unknown preset; one of ${MODEL_PRESET_IDS.join(', ')}` }).optional(),
  /** The API: `openai` (any OpenAI-compatible endpoint, the default), `anthropic`, `gemini` or `ollama`. */
  provider: ModelProviderKind.optional(),
  /** Required unless a preset gives it. */
  baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  /** The variable that holds the API key at run time; stored as apiKeyRef `env:NAME`. */
  apiKeyEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
  /** The provider's model name. */
  model: z.string().trim().min(1),
  /** Left out: the preset's, or none. */
  abilities: z.array(z.enum(MODEL_ABILITIES)).optional(),
  extraArgs: JsonRecord.default({}),
  timeoutMs: z.coerce.number().int().min(1).default(120_000),
  /** Prices per 1M input and output tokens (the query log's cost); left out: no price. */
  inputPricePerMTok: z.coerce.number().min(0).max(1_000_000).optional(),
  outputPricePerMTok: z.coerce.number().min(0).max(1_000_000).optional(),
}).superRefine((m, ctx) => {
  if (!m.baseUrl && !m.preset) ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: 'is required (or name a preset)' });
});

/**
 * LangBot's `extensions_preferences` of a pipeline, the part Conveyor has: which MCP servers its runs
 * may use and which plugins get its events. `enable_all_mcp_servers` true offers every enabled
 * server; false, only those listed in `mcp_servers` (McpServer ids; none when empty). Left out, a
 * pipeline new to the database gets false (MCP servers are opted into, not handed to every
 * pipeline as LangBot does), and one already stored keeps its value (see applyConfigFile).
 * `enable_all_plugins` (default true) calls every registered plugin; when false, only those listed in
 * `plugins` (`author/name`; none when empty). `enable_all_skills` true offers every installed Agent
 * Skill (LangBot's default); false, only those named in `skills`. Left out, both keep what the
 * database holds for the pipeline (all skills for a new one).
 */
export const ExtensionsPreferencesSchema = z.strictObject({
  enable_all_mcp_servers: BooleanLike.optional(),
  mcp_servers: z.array(Id).max(256).default([]),
  enable_all_plugins: BooleanLike.default(true),
  plugins: z.array(PluginName).max(256).default([]),
  enable_all_skills: BooleanLike.optional(),
  skills: z.array(SkillName).max(256).optional(),
});

export const PipelineEntrySchema = z.strictObject({
  id: Id,
  name: Name,
  stages: z.array(z.enum(DEFAULT_PIPELINE_STAGES)).min(1).optional(),
  /** Any subset of LangBot's pipeline config; defaults fill the rest. */
  config: JsonRecord.default({}),
  extensionsPreferences: ExtensionsPreferencesSchema.default({ mcp_servers: [], enable_all_plugins: true, plugins: [] }),
});

export const BotEntrySchema = z.strictObject({
  id: z.uuid(),
  name: Name,
  adapter: z.enum(BOT_ADAPTERS),
  /** Adapter settings, validated by the adapter (HTTP-bot: inbound_secret, callback_url, ...). */
  config: JsonRecord.default({}),
  pipeline: Id,
  enabled: BooleanLike.default(true),
  /** How a chat asks for a person (keywords, the model's tool, the operators' webhook); left out: as stored. */
  humanHandoff: HumanHandoff.optional(),
});

export const McpServerEntrySchema = z.strictObject({
  id: Id,
  name: Name,
  transport: z.enum(MCP_TRANSPORTS),
  config: JsonRecord.default({}),
  enabled: BooleanLike.default(true),
});

const PositiveInt = (max: number) => z.coerce.number().int().min(1).max(max);

/**
 * A knowledge base and the files it holds. Documents are paths relative to the file; setup stores
 * each file (again only when its bytes changed) and the runner ingests it.
 */
export const KnowledgeBaseEntrySchema = z.strictObject({
  id: Id,
  name: Name,
  description: z.string().max(10_000).default(''),
  /** A model id with the `embedding` ability. */
  embeddingModel: Id,
  topK: PositiveInt(64).default(5),
  chunkSize: PositiveInt(100_000).default(512),
  chunkOverlap: z.coerce.number().int().min(0).max(99_999).default(50),
  /** A model id with the `rerank` ability, used when the pipeline names no `rerank-model`. */
  rerankModel: Id.optional(),
  /** `vector` (embeddings), `fulltext` (terms, CJK as bigrams) or `hybrid` (both, fused by reciprocal rank). */
  retrievalMode: z.enum(['vector', 'fulltext', 'hybrid']).default('hybrid'),
  documents: z.array(z.string().trim().min(1).max(4096)).max(10_000).default([]),
}).refine((kb) => kb.chunkOverlap < kb.chunkSize, { message: 'chunkOverlap must be less than chunkSize', path: ['chunkOverlap'] });

/**
 * An Agent Skill to install: a folder holding a SKILL.md (with its scripts and files), its path
 * relative to the file. Setup installs it (again only when its files changed) as managed by the file;
 * a skill the file no longer lists is deleted if the file installed it.
 */
export const SkillEntrySchema = z.strictObject({
  path: z.string().trim().min(1).max(4096),
});

export const ConfigFileSchema = z.strictObject({
  models: z.array(ModelEntrySchema).default([]),
  pipelines: z.array(PipelineEntrySchema).default([]),
  bots: z.array(BotEntrySchema).default([]),
  mcpServers: z.array(McpServerEntrySchema).default([]),
  knowledgeBases: z.array(KnowledgeBaseEntrySchema).default([]),
  skills: z.array(SkillEntrySchema).max(256).default([]),
});

export type ConfigFileInput = z.infer<typeof ConfigFileSchema>;

/** Zod's default for a missing key reads "expected string, received undefined". */
export function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'is required';
  return undefined;
}
