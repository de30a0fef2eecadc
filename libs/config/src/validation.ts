// The one set of configuration checks, made by both writers of configuration: the conveyor.yaml
// loader (setup) and the admin API. A pipeline: LangBot's config shape with defaults filled in,
// known stage names, references to models and MCP servers that exist. A bot: its settings as its
// platform's own schema reads them, so whatever either writer stores is a bot the services can run.
// Issue paths are relative to the entry (`config.ai.runner.runner`, `stages[1]`); each writer puts
// its own prefix in front (`pipelines[0].`, `body.`).
import type { AdminApi } from '@conveyor/contracts';
import { isPipelineStageName, PipelineConfigSchema, withPipelineDefaults, type PipelineConfig, type PipelineStageName } from '@conveyor/pipeline';
import { platforms } from '@conveyor/platforms';
import { formatKeyPath } from './errors.js';

export interface PipelineReferences {
  modelIds: ReadonlySet<string>;
  mcpServerIds: ReadonlySet<string>;
  /** Where the writer looked for ids, appended to an unknown reference's message, e.g. `not in models, nor in the database`. */
  lookedIn?: { models?: string; mcpServers?: string };
}

export interface ValidatedPipeline {
  issues: AdminApi.AdminIssue[];
  config: PipelineConfig;
  stages: PipelineStageName[] | undefined;
}

/** Zod's default for a missing key reads "expected string, received undefined". */
const requiredMessage = (issue: { code: string; input?: unknown }) => (issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined);

export function validatePipeline(input: { config?: Record<string, unknown>; stages?: string[]; mcpServers?: string[] }, refs: PipelineReferences): ValidatedPipeline {
  const issues: AdminApi.AdminIssue[] = [];
  const unknown = (what: string, id: string, where: string | undefined) => `unknown ${what} ${JSON.stringify(id)}${where ? ` (${where})` : ''}`;
  const stages = input.stages?.flatMap((name, i): PipelineStageName[] => {
    if (isPipelineStageName(name)) return [name];
    issues.push({ path: `stages[${i}]`, message: `unknown stage ${JSON.stringify(name)}` });
    return [];
  });
  const config = withPipelineDefaults(input.config ?? {});
  // The check the orchestrator makes before it runs a pipeline, made before the pipeline is stored.
  const parsed = PipelineConfigSchema.safeParse(config, { error: requiredMessage });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) issues.push({ path: formatKeyPath(['config', ...issue.path]), message: issue.message });
  } else {
    const model = parsed.data.ai['local-agent'].model;
    const base = 'config.ai.local-agent.model';
    // LangBot also accepts a plain model id string.
    const named = typeof model === 'string' ? (model ? [{ id: model, path: base }] : []) : [
      ...(model.primary ? [{ id: model.primary, path: `${base}.primary` }] : []),
      ...model.fallbacks.map((id, i) => ({ id, path: `${base}.fallbacks[${i}]` })),
    ];
    for (const ref of named) if (!refs.modelIds.has(ref.id)) issues.push({ path: ref.path, message: unknown('model', ref.id, refs.lookedIn?.models) });
  }
  input.mcpServers?.forEach((id, i) => {
    if (!refs.mcpServerIds.has(id)) issues.push({ path: `extensionsPreferences.mcp_servers[${i}]`, message: unknown('MCP server', id, refs.lookedIn?.mcpServers) });
  });
  return { issues, config, stages };
}

export interface BotSettingsIssue {
  /** `adapter`: no configurable platform has that name; `settings`: the platform refuses the setting at `path`. */
  on: 'adapter' | 'settings';
  /** Key path inside the bot's settings; empty for the adapter, or for the settings as a whole. */
  path: PropertyKey[];
  message: string;
}

/**
 * A bot's adapter and settings (conveyor.yaml's `config:`, the API's `adapterConfig`) as its platform's
 * schema reads them: an HTTP-bot with an empty inbound_secret, a Telegram bot without a token, a key
 * of the wrong type. No issues: the services can run the bot as stored.
 */
export function validateBotSettings(adapter: string, settings: unknown): BotSettingsIssue[] {
  const platform = platforms.get(adapter);
  if (!platform?.configurable) {
    return [{ on: 'adapter', path: [], message: `no platform named ${adapter}; one of ${platforms.configurableNames().join(', ')}` }];
  }
  const parsed = platform.botConfigSchema.safeParse(settings ?? {}, { error: requiredMessage });
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({ on: 'settings', path: issue.path, message: issue.message }));
}
