// Writes a loaded conveyor.yaml into the database as the desired state. Idempotent: a row is
// written only when its content differs, so applying the same file again changes nothing (not even
// updatedAt), and the summary says exactly what changed. Rows the file created and no longer names
// are retired: bots and MCP servers disabled (reversible: naming them again enables them with their
// ids and history), pipelines and models deleted once nothing refers to them, skills deleted. Rows
// created elsewhere (the console, SQL) are never touched unless the file names them, which takes them over.
import { boundMcpServers } from '@conveyor/pipeline';
import type { Prisma, PrismaClient } from '@conveyor/persistence';
import type { SkillPackage } from '@conveyor/sandbox/skills';
import { ConfigFileError, type ConfigIssue } from './errors.js';
import { loadConfigFile, type LoadConfigOptions } from './load.js';
import { readConfigSkills, sameSkillFiles } from './skills.js';
import type { ConveyorConfig } from './types.js';

/** `managedBy` of a row the file owns; any other value (the column's default is `console`) is not the file's. */
export const FILE_MANAGED = 'file';

export interface ApplyCounts {
  created: string[];
  updated: string[];
  unchanged: string[];
  /** Rows the file created and no longer names, now disabled (bots, MCP servers) or deleted (pipelines, models, skills). */
  retired: string[];
  /** Rows the file created and no longer names that something still refers to, so kept for now. */
  kept: string[];
  /** Rows created outside the file that the file does not name: left as they are. */
  notManaged: string[];
}

export interface ApplySummary {
  models: ApplyCounts;
  pipelines: ApplyCounts;
  mcpServers: ApplyCounts;
  bots: ApplyCounts;
  /** Agent Skills, by name. */
  skills: ApplyCounts;
}

export interface ApplyOptions {
  /** Work out every change, then roll the transaction back: the summary is the plan. */
  dryRun?: boolean;
}

/** Serializes concurrent appliers (several replicas starting at once) on one transaction lock. */
const CONFIG_APPLY_LOCK_KEY = 72707370;

/** Key order does not matter in JSONB, so compare with keys sorted. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function differs(existing: Record<string, unknown>, data: Record<string, unknown>): boolean {
  return Object.keys(data).some((key) => canonical(existing[key]) !== canonical(data[key]));
}

interface Table<Row> {
  findUnique(args: { where: { id: string } }): Promise<Row | null>;
  findMany(args: { select: { id: true; managedBy: true }; orderBy: { id: 'asc' } }): Promise<Array<{ id: string; managedBy: string }>>;
  create(args: { data: any }): Promise<unknown>;
  update(args: { where: { id: string }; data: any }): Promise<unknown>;
}

/** Upserts the file's rows; returns the counts and the file-managed rows the file no longer names. */
async function upsert<Row extends Record<string, unknown>>(table: Table<Row>, rows: Array<{ id: string }>): Promise<{ counts: ApplyCounts; gone: string[] }> {
  const counts: ApplyCounts = { created: [], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] };
  for (const fileRow of rows) {
    const row = { ...fileRow, managedBy: FILE_MANAGED };
    const existing = await table.findUnique({ where: { id: row.id } });
    if (!existing) {
      await table.create({ data: row });
      counts.created.push(row.id);
    } else if (differs(existing, row)) {
      // The version moves with every write, so an admin API client holding the old one gets a conflict.
      await table.update({ where: { id: row.id }, data: { ...row, version: { increment: 1 } } });
      counts.updated.push(row.id);
    } else {
      counts.unchanged.push(row.id);
    }
  }
  const inFile = new Set(rows.map((row) => row.id));
  const stored = (await table.findMany({ select: { id: true, managedBy: true }, orderBy: { id: 'asc' } })).filter((row) => !inFile.has(row.id));
  counts.notManaged = stored.filter((row) => row.managedBy !== FILE_MANAGED).map((row) => row.id);
  return { counts, gone: stored.filter((row) => row.managedBy === FILE_MANAGED).map((row) => row.id) };
}

/** Records what became of the rows the file no longer names: changed now, or kept because still in use. */
async function retire(upserted: { counts: ApplyCounts; gone: string[] }, how: (ids: string[]) => Promise<{ retired: string[]; kept: string[] }>): Promise<ApplyCounts> {
  return upserted.gone.length === 0 ? upserted.counts : { ...upserted.counts, ...(await how(upserted.gone)) };
}

/** The model ids a stored pipeline config names (LangBot: a plain id, or `primary` and `fallbacks`). */
function modelIdsNamedBy(config: unknown): string[] {
  const ai = isRecord(config) && isRecord(config.ai) ? config.ai['local-agent'] : undefined;
  const model = isRecord(ai) ? ai.model : undefined;
  if (typeof model === 'string') return [model];
  if (!isRecord(model)) return [];
  const fallbacks = Array.isArray(model.fallbacks) ? model.fallbacks.filter((id): id is string => typeof id === 'string') : [];
  return typeof model.primary === 'string' ? [model.primary, ...fallbacks] : fallbacks;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Bots and MCP servers are disabled, not deleted: their secrets and ids come back when the file names them again. */
async function disable(table: { findMany(args: { where: { id: { in: string[] }; enabled: true }; select: { id: true } }): Promise<Array<{ id: string }>>; updateMany(args: { where: { id: { in: string[] } }; data: { enabled: false; version: { increment: 1 } } }): Promise<unknown> }, ids: string[]) {
  const retired = (await table.findMany({ where: { id: { in: ids }, enabled: true }, select: { id: true } })).map((row) => row.id);
  if (retired.length > 0) await table.updateMany({ where: { id: { in: retired } }, data: { enabled: false, version: { increment: 1 } } });
  return { retired, kept: [] };
}

async function checkDatabaseReferences(tx: Prisma.TransactionClient, config: ConveyorConfig): Promise<void> {
  const inFile = new Set(config.pipelines.map((p) => p.id));
  const missing = [...new Set(config.bots.map((b) => b.pipelineId).filter((id) => !inFile.has(id)))];
  if (missing.length === 0) return;
  const found = new Set((await tx.pipeline.findMany({ where: { id: { in: missing } }, select: { id: true } })).map((p) => p.id));
  const issues: ConfigIssue[] = config.bots.flatMap((bot, i) =>
    inFile.has(bot.pipelineId) || found.has(bot.pipelineId)
      ? []
      : [{ path: `bots[${i}].pipeline`, message: `unknown pipeline ${JSON.stringify(bot.pipelineId)} (not in pipelines, nor in the database)` }],
  );
  if (issues.length) throw new ConfigFileError(config.file, issues);
}

class DryRunRollback extends Error {
  constructor(readonly summary: ApplySummary) {
    super('dry run');
  }
}

/**
 * The file's pipelines with what it leaves out of their bindings decided. `enable_all_mcp_servers`:
 * false for a pipeline the database does not have yet (new pipelines opt into MCP servers through
 * `mcp_servers`), and for one it has, the binding it has, read as LangBot reads it (absent: all), so
 * applying a file written before this default changed takes no tools away. `enable_all_skills` and
 * `skills`: as stored (absent: every skill, LangBot's default), so a skill binding made in the
 * console survives a file that does not speak of skills.
 */
async function withStoredBindings(tx: Prisma.TransactionClient, pipelines: ConveyorConfig['pipelines']): Promise<ConveyorConfig['pipelines']> {
  const out: ConveyorConfig['pipelines'] = [];
  for (const p of pipelines) {
    const prefs = p.extensionsPreferences;
    if (prefs.enable_all_mcp_servers !== undefined && prefs.enable_all_skills !== undefined && prefs.skills !== undefined) {
      out.push(p);
      continue;
    }
    const stored = await tx.pipeline.findUnique({ where: { id: p.id }, select: { extensionsPreferences: true } });
    const storedPrefs = stored && isRecord(stored.extensionsPreferences) ? stored.extensionsPreferences : {};
    const enableAllMcp = prefs.enable_all_mcp_servers ?? (stored ? boundMcpServers(stored.extensionsPreferences) === 'all' : false);
    const enableAllSkills = prefs.enable_all_skills ?? (typeof storedPrefs.enable_all_skills === 'boolean' ? storedPrefs.enable_all_skills : undefined);
    const skills = prefs.skills ?? (Array.isArray(storedPrefs.skills) ? storedPrefs.skills.filter((name): name is string => typeof name === 'string') : undefined);
    out.push({
      ...p,
      extensionsPreferences: {
        ...prefs,
        enable_all_mcp_servers: enableAllMcp,
        // Left out of the row when neither says: LangBot reads an absent binding as every skill.
        ...(enableAllSkills !== undefined ? { enable_all_skills: enableAllSkills } : {}),
        ...(skills !== undefined ? { skills } : {}),
      },
    });
  }
  return out;
}

/**
 * Installs the file's skills (a skill whose files, description and instructions are as stored is
 * left as it is, revision and all), takes over one of the same name installed another way, and
 * deletes the skills the file installed and no longer lists.
 */
async function applySkills(tx: Prisma.TransactionClient, packages: SkillPackage[]): Promise<ApplyCounts> {
  const counts: ApplyCounts = { created: [], updated: [], unchanged: [], retired: [], kept: [], notManaged: [] };
  for (const skill of packages) {
    const data = { description: skill.description, instructions: skill.instructions, archive: new Uint8Array(skill.archive), files: skill.files, bytes: skill.bytes, managedBy: FILE_MANAGED };
    const existing = await tx.skill.findUnique({ where: { name: skill.name }, select: { description: true, instructions: true, archive: true, files: true, bytes: true, managedBy: true } });
    if (!existing) {
      await tx.skill.create({ data: { name: skill.name, ...data } });
      counts.created.push(skill.name);
    } else if (
      existing.managedBy !== FILE_MANAGED || existing.description !== skill.description || existing.instructions !== skill.instructions ||
      existing.files !== skill.files || existing.bytes !== skill.bytes || !(await sameSkillFiles(existing.archive, skill.archive))
    ) {
      // A new revision: sandbox replicas unpack the skill again.
      await tx.skill.update({ where: { name: skill.name }, data: { ...data, revision: { increment: 1 } } });
      counts.updated.push(skill.name);
    } else {
      counts.unchanged.push(skill.name);
    }
  }
  const inFile = new Set(packages.map((skill) => skill.name));
  const stored = (await tx.skill.findMany({ select: { name: true, managedBy: true }, orderBy: { name: 'asc' } })).filter((row) => !inFile.has(row.name));
  counts.notManaged = stored.filter((row) => row.managedBy !== FILE_MANAGED).map((row) => row.name);
  const gone = stored.filter((row) => row.managedBy === FILE_MANAGED).map((row) => row.name);
  if (gone.length > 0) await tx.skill.deleteMany({ where: { name: { in: gone }, managedBy: FILE_MANAGED } });
  counts.retired = gone;
  return counts;
}

/**
 * Makes the database hold what `config` says, in one transaction: upserts every model, pipeline, MCP
 * server, bot and skill of the file and retires the file's rows it no longer names (bots first, so a
 * pipeline they alone used can go, then pipelines, so a model they alone used can go). The skills'
 * folders are read first: one that cannot be installed stops the apply before anything is written.
 */
export async function applyConfigFile(prisma: PrismaClient, config: ConveyorConfig, options: ApplyOptions = {}): Promise<ApplySummary> {
  const skillPackages = await readConfigSkills(config);
  try {
    return await prisma.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${CONFIG_APPLY_LOCK_KEY})`);
        await checkDatabaseReferences(tx, config);
        // Referenced rows first (a bot names a pipeline), then retirement the other way round
        // (a bot the file dropped may free its pipeline, and a dropped pipeline its model).
        const upsertedModels = await upsert(tx.llmModel, config.models);
        const upsertedPipelines = await upsert(tx.pipeline, await withStoredBindings(tx, config.pipelines));
        const upsertedMcpServers = await upsert(tx.mcpServer, config.mcpServers);
        const upsertedBots = await upsert(tx.bot, config.bots);
        const bots = await retire(upsertedBots, (ids) => disable(tx.bot, ids));
        const mcpServers = await retire(upsertedMcpServers, (ids) => disable(tx.mcpServer, ids));
        const pipelines = await retire(upsertedPipelines, async (ids) => {
          const used = new Set((await tx.bot.findMany({ where: { pipelineId: { in: ids } }, select: { pipelineId: true } })).map((b) => b.pipelineId));
          const retired = ids.filter((id) => !used.has(id));
          if (retired.length > 0) await tx.pipeline.deleteMany({ where: { id: { in: retired } } });
          return { retired, kept: ids.filter((id) => used.has(id)) };
        });
        const models = await retire(upsertedModels, async (ids) => {
          const used = new Set((await tx.pipeline.findMany({ select: { config: true } })).flatMap((p) => modelIdsNamedBy(p.config)));
          const retired = ids.filter((id) => !used.has(id));
          if (retired.length > 0) await tx.llmModel.deleteMany({ where: { id: { in: retired } } });
          return { retired, kept: ids.filter((id) => used.has(id)) };
        });
        const skills = await applySkills(tx, skillPackages);
        const summary = { models, pipelines, mcpServers, bots, skills };
        if (options.dryRun) throw new DryRunRollback(summary);
        return summary;
      },
      { maxWait: 10_000, timeout: 60_000 },
    );
  } catch (err) {
    if (err instanceof DryRunRollback) return err.summary;
    throw err;
  }
}

const KINDS = ['bots', 'pipelines', 'models', 'mcpServers', 'skills'] as const;

/** One line per kind that changed, in the order the apply works (what a dry run prints). */
export function describeChanges(summary: ApplySummary): string[] {
  return KINDS.flatMap((kind) => {
    const c = summary[kind];
    const retiredAs = kind === 'bots' || kind === 'mcpServers' ? 'disabled' : 'deleted';
    const parts = [
      ...(c.created.length ? [`create ${c.created.join(', ')}`] : []),
      ...(c.updated.length ? [`update ${c.updated.join(', ')}`] : []),
      ...(c.retired.length ? [`${retiredAs} (no longer in the file) ${c.retired.join(', ')}`] : []),
      ...(c.kept.length ? [`kept although no longer in the file, still in use ${c.kept.join(', ')}`] : []),
    ];
    return parts.length ? [`${kind}: ${parts.join('; ')}`] : [];
  });
}

/**
 * Names the rows the file does not manage and does not name, or undefined when there is none. They
 * were created outside the file (the console, SQL); applying leaves them alone, so a bot listed here
 * keeps answering, and the operator should know.
 */
export function notManagedWarning(file: string, summary: ApplySummary): string | undefined {
  const kinds = KINDS.filter((kind) => summary[kind].notManaged.length > 0);
  if (kinds.length === 0) return undefined;
  const listed = kinds.map((kind) => `${kind} ${summary[kind].notManaged.join(', ')}`).join('; ');
  return `in the database, created outside ${file} and not named by it, left unchanged (a bot listed here still answers): ${listed}`;
}

/**
 * Loads `file` and applies it. Bots may name pipelines, and pipelines models and MCP servers, that
 * exist only in the database.
 */
export async function syncConfigFile(
  prisma: PrismaClient,
  file: string,
  options: Omit<LoadConfigOptions, 'knownPipelineIds' | 'knownModelIds' | 'knownMcpServerIds'> & ApplyOptions = {},
): Promise<{ config: ConveyorConfig; summary: ApplySummary }> {
  const [pipelines, models, mcpServers] = await Promise.all([
    prisma.pipeline.findMany({ select: { id: true } }),
    prisma.llmModel.findMany({ select: { id: true } }),
    prisma.mcpServer.findMany({ select: { id: true } }),
  ]);
  const config = await loadConfigFile(file, {
    ...options,
    knownPipelineIds: pipelines.map((p) => p.id),
    knownModelIds: models.map((m) => m.id),
    knownMcpServerIds: mcpServers.map((m) => m.id),
  });
  return { config, summary: await applyConfigFile(prisma, config, { dryRun: options.dryRun }) };
}
