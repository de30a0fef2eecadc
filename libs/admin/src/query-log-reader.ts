// The query log as the console reads it: newest first, filtered, paged by a keyset cursor (the last
// row's receivedAt and id), so a page costs the same however deep and new rows do not shift pages.
import { AdminApi } from '@conveyor/contracts';

const { AuditResource } = AdminApi;
import type { Prisma, PrismaClient } from '@conveyor/persistence';
import { AdminApiError } from './errors.js';
import type { Paged } from './config-store.js';

function encodeCursor(row: { receivedAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.receivedAt.toISOString(), row.id])).toString('base64url');
}

function decodeCursor(cursor: string): { receivedAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const receivedAt = new Date(String(at));
    if (typeof id === 'string' && !Number.isNaN(receivedAt.getTime())) return { receivedAt, id };
  } catch {
    // Reported below as a bad cursor.
  }
  throw AdminApiError.invalid('query.cursor', 'is not a cursor this API returned');
}

export async function listQueries(prisma: PrismaClient, filter: AdminApi.QueryLogFilter): Promise<Paged<AdminApi.QueryLogEntry>> {
  const where: Prisma.QueryRecordWhereInput = {
    ...(filter.botId ? { botId: filter.botId } : {}),
    ...(filter.launcherType ? { launcherType: filter.launcherType } : {}),
    ...(filter.launcherId ? { launcherId: filter.launcherId } : {}),
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.from || filter.to ? { receivedAt: { ...(filter.from ? { gte: new Date(filter.from) } : {}), ...(filter.to ? { lt: new Date(filter.to) } : {}) } } : {}),
  };
  const after = filter.cursor ? decodeCursor(filter.cursor) : undefined;
  const rows = await prisma.queryRecord.findMany({
    where: after ? { AND: [where, { OR: [{ receivedAt: { lt: after.receivedAt } }, { receivedAt: after.receivedAt, id: { lt: after.id } }] }] } : where,
    orderBy: [{ receivedAt: 'desc' }, { id: 'desc' }],
    take: filter.limit + 1,
  });
  const more = rows.length > filter.limit;
  const page = more ? rows.slice(0, filter.limit) : rows;
  return { items: page.map(queryDto), nextCursor: more ? encodeCursor(page[page.length - 1]) : null };
}

export async function getQuery(prisma: PrismaClient, id: string): Promise<AdminApi.QueryLogEntry> {
  const row = await prisma.queryRecord.findUnique({ where: { id } });
  if (!row) throw AdminApiError.notFound('query', id);
  return queryDto(row);
}

function queryDto(row: Prisma.QueryRecordGetPayload<object>): AdminApi.QueryLogEntry {
  return {
    id: row.id,
    botId: row.botId,
    pipelineId: row.pipelineId,
    launcherType: row.launcherType,
    launcherId: row.launcherId,
    status: row.status,
    receivedAt: row.receivedAt.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    finishedAt: row.finishedAt?.toISOString() ?? null,
    error: row.error,
    traceId: row.traceId,
    traceSampled: row.traceSampled,
    attempt: row.attempt,
    mergedInto: row.mergedInto,
    model: row.model,
    runner: row.runner,
    modelCalls: row.modelCalls,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    cost: row.cost,
  };
}

export async function listAudit(prisma: PrismaClient, filter: AdminApi.AuditFilterInput): Promise<Paged<AdminApi.AuditEntry>> {
  let before: bigint | undefined;
  if (filter.cursor) {
    if (!/^\d{1,19}$/.test(filter.cursor)) throw AdminApiError.invalid('query.cursor', 'is not a cursor this API returned');
    before = BigInt(filter.cursor);
  }
  const rows = await prisma.auditEntry.findMany({
    where: {
      ...(filter.resource ? { resource: filter.resource } : {}),
      ...(filter.resourceId ? { resourceId: filter.resourceId } : {}),
      ...(filter.actor ? { actor: filter.actor } : {}),
      ...(before !== undefined ? { id: { lt: before } } : {}),
    },
    orderBy: { id: 'desc' },
    take: filter.limit + 1,
  });
  const more = rows.length > filter.limit;
  const page = more ? rows.slice(0, filter.limit) : rows;
  return {
    items: page.map((r) => ({
      id: r.id.toString(),
      at: r.at.toISOString(),
      actor: r.actor,
      resource: AuditResource.parse(r.resource),
      resourceId: r.resourceId,
      action: r.action,
      versionBefore: r.versionBefore,
      versionAfter: r.versionAfter,
      changes: r.changes,
    })),
    nextCursor: more ? page[page.length - 1].id.toString() : null,
  };
}
