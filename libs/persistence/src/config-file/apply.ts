// Writes a loaded conveyor.yaml into the database. Idempotent: a row is written only when its
// content differs, so applying the same file again changes nothing (not even updatedAt), and
// the summary says exactly what changed (callers publish cache invalidations from it).
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import { ConfigFileError, type ConfigIssue } from './errors.js';
import { loadConfigFile, type LoadConfigOptions } from './load.js';
import type { ConveyorConfig } from './types.js';

export interface ApplyCounts {
  created: string[];
  updated: string[];
  unchanged: string[];
  /** Rows in the database that the file does not mention. Applying never deletes: they stay as they are. */
  notInFile: string[];
}

export interface ApplySummary {
  models: ApplyCounts;
  pipelines: ApplyCounts;
  mcpServers: ApplyCounts;
  bots: ApplyCounts;
  knowledgeBases: ApplyCounts;
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
  findMany(args: { select: { id: true }; orderBy: { id: 'asc' } }): Promise<Array<{ id: string }>>;
  create(args: { data: any }): Promise<unknown>;
  update(args: { where: { id: string }; data: any }): Promise<unknown>;
}

async function sync<Row extends Record<string, unknown>>(table: Table<Row>, rows: Array<{ id: string }>): Promise<ApplyCounts> {
  const counts: ApplyCounts = { created: [], updated: [], unchanged: [], notInFile: [] };
  for (const row of rows) {
    const existing = await table.findUnique({ where: { id: row.id } });
    if (!existing) {
      await table.create({ data: row });
      counts.created.push(row.id);
    } else if (differs(existing, row)) {
      await table.update({ where: { id: row.id }, data: row });
      counts.updated.push(row.id);
    } else {
      counts.unchanged.push(row.id);
    }
  }
  const inFile = new Set(rows.map((row) => row.id));
  const stored = await table.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
  counts.notInFile = stored.map((row) => row.id).filter((id) => !inFile.has(id));
  return counts;
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

/** Upserts every model, pipeline, MCP server and bot of `config` in one transaction. */
export async function applyConfigFile(prisma: PrismaClient, config: ConveyorConfig): Promise<ApplySummary> {
  return prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${CONFIG_APPLY_LOCK_KEY})`);
      await checkDatabaseReferences(tx, config);
      return {
        models: await sync(tx.llmModel, config.models),
        pipelines: await sync(tx.pipeline, config.pipelines),
        mcpServers: await sync(tx.mcpServer, config.mcpServers),
        bots: await sync(tx.bot, config.bots),
        knowledgeBases: await sync(tx.knowledgeBase, config.knowledgeBases),
      };
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

/**
 * Names every row of the database that the file does not mention, or undefined when there is none.
 * Applying never deletes, so a bot removed from the file keeps answering until it is disabled or
 * deleted in the database; the operator has to be told.
 */
export function notInFileWarning(file: string, summary: ApplySummary): string | undefined {
  const kinds = (['bots', 'pipelines', 'models', 'mcpServers', 'knowledgeBases'] as const).filter((kind) => summary[kind].notInFile.length > 0);
  if (kinds.length === 0) return undefined;
  const listed = kinds.map((kind) => `${kind} ${summary[kind].notInFile.join(', ')}`).join('; ');
  return `in the database but not in ${file}, left unchanged (a bot listed here still answers): ${listed}`;
}

/**
 * Loads `file` and applies it. Bots may name pipelines, and pipelines models and MCP servers, that
 * exist only in the database.
 */
export async function syncConfigFile(
  prisma: PrismaClient,
  file: string,
  options: Omit<LoadConfigOptions, 'knownPipelineIds' | 'knownModelIds' | 'knownMcpServerIds'> = {},
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
  return { config, summary: await applyConfigFile(prisma, config) };
}
