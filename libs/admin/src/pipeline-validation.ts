// The checks setup makes on a conveyor.yaml pipeline, made on an API body: LangBot's config shape with
// defaults filled in, known stage names, and references to models and MCP servers that exist. Issue
// paths are relative to the body (`config.ai.runner.runner`), as the loader names key paths.
import type { AdminApi } from '@conveyor/contracts';
import { isPipelineStageName, PipelineConfigSchema, withPipelineDefaults, type PipelineConfig, type PipelineStageName } from '@conveyor/pipeline';
import { keyPath } from './errors.js';

export interface PipelineReferences {
  modelIds: ReadonlySet<string>;
  mcpServerIds: ReadonlySet<string>;
}

export interface ValidatedPipeline {
  issues: AdminApi.AdminIssue[];
  config: PipelineConfig;
  stages: PipelineStageName[] | undefined;
}

export function validatePipeline(input: { config?: Record<string, unknown>; stages?: string[]; mcpServers?: string[] }, refs: PipelineReferences): ValidatedPipeline {
  const issues: AdminApi.AdminIssue[] = [];
  const stages = input.stages?.flatMap((name, i): PipelineStageName[] => {
    if (isPipelineStageName(name)) return [name];
    issues.push({ path: `stages[${i}]`, message: `unknown stage ${JSON.stringify(name)}` });
    return [];
  });
  const config = withPipelineDefaults(input.config ?? {});
  const parsed = PipelineConfigSchema.safeParse(config, {
    error: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined),
  });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) issues.push({ path: keyPath(['config', ...issue.path]), message: issue.message });
  } else {
    const model = parsed.data.ai['local-agent'].model;
    const base = 'config.ai.local-agent.model';
    const named = typeof model === 'string' ? (model ? [{ id: model, path: base }] : []) : [
      ...(model.primary ? [{ id: model.primary, path: `${base}.primary` }] : []),
      ...model.fallbacks.map((id, i) => ({ id, path: `${base}.fallbacks[${i}]` })),
    ];
    for (const ref of named) if (!refs.modelIds.has(ref.id)) issues.push({ path: ref.path, message: `unknown model ${JSON.stringify(ref.id)}` });
  }
  input.mcpServers?.forEach((id, i) => {
    if (!refs.mcpServerIds.has(id)) issues.push({ path: `extensionsPreferences.mcp_servers[${i}]`, message: `unknown MCP server ${JSON.stringify(id)}` });
  });
  return { issues, config, stages };
}
