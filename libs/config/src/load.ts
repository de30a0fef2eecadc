import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { defaultPipelineStages, withPipelineDefaults } from '@conveyor/pipeline';
import { parseDocument } from 'yaml';
import { modelPreset } from '@conveyor/contracts';
import { ConfigFileError, formatKeyPath, type ConfigIssue } from './errors.js';
import { interpolateEnv, type Env } from './interpolate.js';
import { ConfigFileSchema, issueMessage, type ConfigFileInput } from './schema.js';
import type { ConveyorConfig } from './types.js';
import { validateBotSettings, validatePipeline } from './validation.js';

export interface LoadConfigOptions {
  /** Variables for `${NAME}`; default process.env. */
  env?: Env;
  /** Pipelines that exist outside the file (in the database), so bots may name them. */
  knownPipelineIds?: Iterable<string>;
  /** Models that exist outside the file (in the database), so pipelines may name them. */
  knownModelIds?: Iterable<string>;
  /** MCP servers that exist outside the file (in the database), so pipelines may bind them. */
  knownMcpServerIds?: Iterable<string>;
}

/** Reads, interpolates, validates and completes a conveyor.yaml. Throws ConfigFileError. */
export async function loadConfigFile(file: string, options: LoadConfigOptions = {}): Promise<ConveyorConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(file, [{ path: '', message: `cannot read the file: ${(err as Error).message}` }]);
  }
  return parseConfigText(text, file, options);
}

export function parseConfigText(text: string, file: string, options: LoadConfigOptions = {}): ConveyorConfig {
  const raw = parseYaml(text, file);
  const issues: ConfigIssue[] = [];
  const interpolated = interpolateEnv(raw, options.env ?? process.env, issues);
  if (issues.length) throw new ConfigFileError(file, issues);

  const parsed = ConfigFileSchema.safeParse(interpolated, { error: issueMessage });
  if (!parsed.success) {
    throw new ConfigFileError(file, parsed.error.issues.map((issue) => ({ path: formatKeyPath(issue.path), message: issue.message })));
  }
  const config = complete(parsed.data, file);
  checkReferences(config, options, issues);
  if (issues.length) throw new ConfigFileError(file, issues);
  return config;
}

function parseYaml(text: string, file: string): unknown {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) {
    throw new ConfigFileError(file, doc.errors.map((err) => ({
      path: '',
      message: `YAML syntax error${err.linePos ? ` at line ${err.linePos[0].line}, column ${err.linePos[0].col}` : ''}: ${err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`,
    })));
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    // The YAML library refuses aliases that expand past the count (a "billion laughs" file) with a ReferenceError.
    throw new ConfigFileError(file, [{ path: '', message: `YAML aliases expand too far (more than ${MAX_ALIAS_COUNT} uses of an alias): ${(err as Error).message}` }]);
  }
  const cycle = selfReference(value);
  if (cycle) {
    throw new ConfigFileError(file, [{ path: formatKeyPath(cycle), message: 'a YAML alias refers to a node that contains it; the value would be infinitely deep' }]);
  }
  if (value === null || value === undefined) {
    throw new ConfigFileError(file, [{ path: '', message: 'the file is empty; expected a mapping with models, pipelines and bots' }]);
  }
  return value;
}

const MAX_ALIAS_COUNT = 100;

/**
 * The key path at which a value contains itself, or undefined. An alias inside its own anchor
 * (`a: &a [*a]`) becomes a circular structure, on which every recursive step after parsing (env
 * interpolation, validation) would overflow the stack. Walks with an explicit stack: the input may be deep.
 */
function selfReference(root: unknown): PropertyKey[] | undefined {
  interface Visit {
    value: object;
    key: PropertyKey | undefined;
    parent: Visit | undefined;
    leaving: boolean;
  }
  const pathOf = (visit: Visit): PropertyKey[] => {
    const keys: PropertyKey[] = [];
    for (let v: Visit | undefined = visit; v?.key !== undefined; v = v.parent) keys.unshift(v.key);
    return keys;
  };
  if (typeof root !== 'object' || root === null) return undefined;
  const open = new Set<object>();
  const stack: Visit[] = [{ value: root, key: undefined, parent: undefined, leaving: false }];
  for (let visit = stack.pop(); visit; visit = stack.pop()) {
    if (visit.leaving) {
      open.delete(visit.value);
      continue;
    }
    if (open.has(visit.value)) return pathOf(visit);
    open.add(visit.value);
    stack.push({ ...visit, leaving: true });
    const children: [PropertyKey, unknown][] = Array.isArray(visit.value) ? visit.value.map((v, i): [number, unknown] => [i, v]) : Object.entries(visit.value);
    // Reversed onto the stack, so the first cycle found is the first in the file.
    for (const [key, child] of children.reverse()) {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, key, parent: visit, leaving: false });
    }
  }
  return undefined;
}

function complete(input: ConfigFileInput, file: string): ConveyorConfig {
  return {
    file,
    models: input.models.map((m) => {
      const preset = m.preset ? modelPreset(m.preset) : undefined;
      return {
        id: m.id,
        name: m.name ?? m.id,
        provider: m.provider ?? preset?.provider ?? 'openai',
        // The schema requires one of the two.
        baseUrl: m.baseUrl ?? preset?.baseUrl ?? '',
        apiKeyRef: m.apiKeyEnv ? `env:${m.apiKeyEnv}` : '',
        modelId: m.model,
        abilities: [...new Set(m.abilities ?? preset?.abilities ?? [])],
        extraArgs: m.extraArgs,
        timeoutMs: m.timeoutMs,
        inputPricePerMTok: m.inputPricePerMTok ?? null,
        outputPricePerMTok: m.outputPricePerMTok ?? null,
      };
    }),
    pipelines: input.pipelines.map((p) => ({
      id: p.id,
      name: p.name ?? p.id,
      stages: p.stages ?? defaultPipelineStages(),
      config: withPipelineDefaults(p.config),
      extensionsPreferences: {
        ...(p.extensionsPreferences.enable_all_mcp_servers !== undefined ? { enable_all_mcp_servers: p.extensionsPreferences.enable_all_mcp_servers } : {}),
        mcp_servers: [...new Set(p.extensionsPreferences.mcp_servers)],
        enable_all_plugins: p.extensionsPreferences.enable_all_plugins,
        plugins: [...new Set(p.extensionsPreferences.plugins)],
        ...(p.extensionsPreferences.enable_all_skills !== undefined ? { enable_all_skills: p.extensionsPreferences.enable_all_skills } : {}),
        ...(p.extensionsPreferences.skills !== undefined ? { skills: [...new Set(p.extensionsPreferences.skills)] } : {}),
      },
    })),
    bots: input.bots.map((b) => ({
      id: b.id,
      name: b.name ?? b.id,
      adapter: b.adapter,
      adapterConfig: b.config,
      pipelineId: b.pipeline,
      enabled: b.enabled,
      ...(b.humanHandoff ? { humanHandoff: b.humanHandoff } : {}),
    })),
    mcpServers: input.mcpServers.map((s) => ({
      id: s.id,
      name: s.name ?? s.id,
      transport: s.transport,
      config: s.config,
      enabled: s.enabled,
    })),
    knowledgeBases: input.knowledgeBases.map((kb) => ({
      id: kb.id,
      name: kb.name ?? kb.id,
      description: kb.description,
      embeddingModelId: kb.embeddingModel,
      topK: kb.topK,
      chunkSize: kb.chunkSize,
      chunkOverlap: kb.chunkOverlap,
      rerankModelId: kb.rerankModel ?? null,
      retrievalMode: kb.retrievalMode,
    })),
    knowledgeDocuments: input.knowledgeBases.flatMap((kb) =>
      [...new Set(kb.documents)].map((doc) => ({ knowledgeBaseId: kb.id, path: path.resolve(path.dirname(path.resolve(file)), doc) })),
    ),
    skills: input.skills.map((s) => ({ path: path.resolve(path.dirname(path.resolve(file)), s.path) })),
  };
}

function checkDuplicates(kind: string, ids: string[], issues: ConfigIssue[]): void {
  const seen = new Set<string>();
  ids.forEach((id, i) => {
    if (seen.has(id)) issues.push({ path: `${kind}[${i}].id`, message: `duplicate id ${JSON.stringify(id)}` });
    seen.add(id);
  });
}

function checkReferences(config: ConveyorConfig, options: LoadConfigOptions, issues: ConfigIssue[]): void {
  checkDuplicates('models', config.models.map((m) => m.id), issues);
  checkDuplicates('pipelines', config.pipelines.map((p) => p.id), issues);
  checkDuplicates('bots', config.bots.map((b) => b.id), issues);
  checkDuplicates('mcpServers', config.mcpServers.map((s) => s.id), issues);
  checkDuplicates('knowledgeBases', config.knowledgeBases.map((kb) => kb.id), issues);
  const skillFolders = new Set<string>();
  config.skills.forEach((skill, i) => {
    if (skillFolders.has(skill.path)) issues.push({ path: `skills[${i}].path`, message: `duplicate folder ${JSON.stringify(skill.path)}` });
    skillFolders.add(skill.path);
  });

  const modelIds = new Set([...config.models.map((m) => m.id), ...(options.knownModelIds ?? [])]);
  const mcpServerIds = new Set([...config.mcpServers.map((m) => m.id), ...(options.knownMcpServerIds ?? [])]);
  const lookedIn = { models: 'not in models, nor in the database', mcpServers: 'not in mcpServers, nor in the database' };
  config.pipelines.forEach((pipeline, i) => {
    // The checks the admin API makes on a pipeline, so a pipeline setup stores is one the API would accept.
    const checked = validatePipeline({ config: pipeline.config, stages: pipeline.stages, mcpServers: pipeline.extensionsPreferences.mcp_servers }, { modelIds, mcpServerIds, lookedIn });
    for (const issue of checked.issues) issues.push({ path: `pipelines[${i}].${issue.path}`, message: issue.message });
  });

  config.knowledgeBases.forEach((kb, i) => {
    if (!modelIds.has(kb.embeddingModelId)) issues.push({ path: `knowledgeBases[${i}].embeddingModel`, message: `unknown model ${JSON.stringify(kb.embeddingModelId)} (not in models, nor in the database)` });
    if (kb.rerankModelId && !modelIds.has(kb.rerankModelId)) issues.push({ path: `knowledgeBases[${i}].rerankModel`, message: `unknown model ${JSON.stringify(kb.rerankModelId)} (not in models, nor in the database)` });
  });

  const pipelineIds = new Set([...config.pipelines.map((p) => p.id), ...(options.knownPipelineIds ?? [])]);
  config.bots.forEach((bot, i) => {
    if (!pipelineIds.has(bot.pipelineId)) {
      issues.push({ path: `bots[${i}].pipeline`, message: `unknown pipeline ${JSON.stringify(bot.pipelineId)} (not in pipelines, nor in the database)` });
    }
    // The check the admin API makes: a bot setup stores is one its platform can run, and a setting
    // that would leave it open (an HTTP-bot with an empty inbound_secret) stops setup here. The
    // message names the bot, since a file's bots are told apart by id and name, not by position.
    const which = `${bot.adapter} bot ${bot.id}${bot.name !== bot.id ? ` (${JSON.stringify(bot.name)})` : ''}`;
    for (const issue of validateBotSettings(bot.adapter, bot.adapterConfig)) {
      const key = issue.on === 'adapter' ? ['bots', i, 'adapter'] : ['bots', i, 'config', ...issue.path];
      issues.push({ path: formatKeyPath(key), message: `${issue.message} (${which})` });
    }
  });
}
