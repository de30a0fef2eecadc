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

/**
 * LangBot's PreProcessor reading one kind of `extensions_preferences`: `allKey` (absent: true) binds
 * every one of the kind, otherwise the names listed under `listKey` (none when the list is empty).
 */
function bound(extensionsPreferences: unknown, allKey: string, listKey: string): 'all' | string[] {
  const prefs = extensionsPreferences && typeof extensionsPreferences === 'object' && !Array.isArray(extensionsPreferences) ? (extensionsPreferences as Record<string, unknown>) : {};
  if (prefs[allKey] ?? true) return 'all';
  const listed = prefs[listKey];
  return Array.isArray(listed) ? listed.filter((name): name is string => typeof name === 'string') : [];
}

/** The installed skills a pipeline's runs may activate (`enable_all_skills`, `skills`; LangBot's `_pipeline_bound_skills`). */
export function boundSkills(extensionsPreferences: unknown): 'all' | string[] {
  return bound(extensionsPreferences, 'enable_all_skills', 'skills');
}

/** The plugins called for a pipeline's events, by `author/name` (`enable_all_plugins`, `plugins`). */
export function boundPlugins(extensionsPreferences: unknown): 'all' | string[] {
  return bound(extensionsPreferences, 'enable_all_plugins', 'plugins');
}

/** Whether a pipeline's extensions preferences bind the plugin named (every plugin, or it by name). */
export function bindsPlugin(extensionsPreferences: unknown, plugin: string): boolean {
  const bound = boundPlugins(extensionsPreferences);
  return bound === 'all' || bound.includes(plugin);
}

/** The MCP servers a pipeline's runs use (`enable_all_mcp_servers`, `mcp_servers`). */
export function boundMcpServers(extensionsPreferences: unknown): 'all' | string[] {
  return bound(extensionsPreferences, 'enable_all_mcp_servers', 'mcp_servers');
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
