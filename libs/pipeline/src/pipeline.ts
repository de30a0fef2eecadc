import { isPipelineStageName } from './defaults.js';
import { parsePipelineConfig, type ConfigIssue } from './config/load.js';
import type { PipelineSettings } from './config/schema.js';
import type { PipelineDeps } from './engine/ports.js';
import type { Stage } from './engine/stage.js';
import { STAGE_REGISTRY } from './stages/registry.js';

/** The stage whose items cross the wire: stages before it run in the orchestrator, after it in the dispatcher. */
export const BOUNDARY_STAGE = 'MessageProcessor';

/** A validated pipeline: its stage names, its parsed config and where it splits. */
export interface PipelineDefinition {
  id: string;
  stageNames: string[];
  config: PipelineSettings;
  /** Index of MessageProcessor in stageNames. */
  boundary: number;
  /** The MCP servers its runs may use: every enabled one, or these ids (LangBot's `_pipeline_bound_mcp_servers`). */
  mcpServers: 'all' | string[];
  /** The plugins called for its events: every registered one, or these `author/name`s (LangBot's `_pipeline_bound_plugins`). */
  plugins: 'all' | string[];
  /** The installed skills its runs may activate: all, or these names (LangBot's `_pipeline_bound_skills`). */
  skills: 'all' | string[];
}

function preferences(extensionsPreferences: unknown): Record<string, unknown> {
  return extensionsPreferences && typeof extensionsPreferences === 'object' && !Array.isArray(extensionsPreferences) ? (extensionsPreferences as Record<string, unknown>) : {};
}

/**
 * LangBot's PreProcessor reading `extensions_preferences`: `enable_all_skills` (absent: true) binds
 * every installed skill, otherwise the `skills` listed (none when the list is empty).
 */
export function boundSkills(extensionsPreferences: unknown): 'all' | string[] {
  const prefs = preferences(extensionsPreferences);
  if (prefs.enable_all_skills ?? true) return 'all';
  return Array.isArray(prefs.skills) ? prefs.skills.filter((name): name is string => typeof name === 'string') : [];
}

/**
 * LangBot's `RuntimePipeline` reading `extensions_preferences`: `enable_all_plugins` (absent: true)
 * binds every plugin, otherwise the `plugins` listed (none when the list is empty).
 */
export function boundPlugins(extensionsPreferences: unknown): 'all' | string[] {
  const prefs = preferences(extensionsPreferences);
  if (prefs.enable_all_plugins ?? true) return 'all';
  return Array.isArray(prefs.plugins) ? prefs.plugins.filter((id): id is string => typeof id === 'string') : [];
}

/**
 * LangBot's `RuntimePipeline` reading `extensions_preferences`: `enable_all_mcp_servers` (absent:
 * true) binds every server, otherwise the `mcp_servers` listed (none when the list is empty).
 */
export function boundMcpServers(extensionsPreferences: unknown): 'all' | string[] {
  const prefs = preferences(extensionsPreferences);
  if (prefs.enable_all_mcp_servers ?? true) return 'all';
  return Array.isArray(prefs.mcp_servers) ? prefs.mcp_servers.filter((id): id is string => typeof id === 'string') : [];
}

export type LoadResult = { ok: true; pipeline: PipelineDefinition } | { ok: false; issues: ConfigIssue[] };

/**
 * Validates a stored pipeline. An unknown stage name or an invalid config rejects this pipeline only,
 * with the key path and reason. MessageProcessor must appear exactly once: it is where the pipeline
 * splits between the services (LangBot would run a pipeline without it and reply nothing).
 */
export function loadPipeline(id: string, stages: unknown, config: unknown, extensionsPreferences?: unknown): LoadResult {
  const issues: ConfigIssue[] = [];
  if (!Array.isArray(stages)) issues.push({ path: 'stages', reason: 'must be a list of stage names' });
  const names = Array.isArray(stages) ? stages : [];
  names.forEach((n, i) => {
    if (typeof n !== 'string' || !isPipelineStageName(n)) issues.push({ path: `stages[${i}]`, reason: `unknown stage ${JSON.stringify(n)}` });
  });
  const boundaryCount = names.filter((n) => n === BOUNDARY_STAGE).length;
  if (Array.isArray(stages) && boundaryCount !== 1) issues.push({ path: 'stages', reason: `${BOUNDARY_STAGE} must appear exactly once (found ${boundaryCount})` });
  const parsed = parsePipelineConfig(config);
  if (!parsed.ok) issues.push(...parsed.issues.map((i) => ({ path: i.path ? `config.${i.path}` : 'config', reason: i.reason })));
  if (issues.length > 0 || !parsed.ok) return { ok: false, issues };
  return { ok: true, pipeline: { id, stageNames: names as string[], config: parsed.config, boundary: names.indexOf(BOUNDARY_STAGE), mcpServers: boundMcpServers(extensionsPreferences), plugins: boundPlugins(extensionsPreferences), skills: boundSkills(extensionsPreferences) } };
}

export function describeIssues(issues: readonly ConfigIssue[]): string {
  return issues.map((i) => `${i.path}: ${i.reason}`).join('; ');
}

/** Stage instances for one side of the split; `from`/`to` are indexes into the stage names. */
export function instantiate(def: PipelineDefinition, deps: PipelineDeps, from = 0, to = def.stageNames.length): Stage[] {
  return def.stageNames.slice(from, to).map((name) => STAGE_REGISTRY[name as keyof typeof STAGE_REGISTRY]({ name, config: def.config, deps }));
}
