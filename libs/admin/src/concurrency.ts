// Optimistic concurrency: a write names the version it read (If-Match or the body's `version`), and
// changes the row only if that is still the version stored. The check and the write are one UPDATE
// ... WHERE version = expected, so two writers that read the same version cannot both succeed.
import { AdminApiError } from './errors.js';

/**
 * The version a write expects, from `If-Match` (`3`, `"3"`, `W/"3"`) and/or the body's `version`.
 * Both given must agree; neither is 428.
 */
export function expectedVersion(ifMatch: string | undefined, bodyVersion: number | undefined): number {
  let header: number | undefined;
  if (ifMatch !== undefined && ifMatch.trim() !== '') {
    const match = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(ifMatch);
    if (!match || Number(match[1]) < 1) throw AdminApiError.invalid('header.if-match', 'must be the resource version, e.g. "3"');
    header = Number(match[1]);
  }
  if (header !== undefined && bodyVersion !== undefined && header !== bodyVersion) {
    throw AdminApiError.invalid('body.version', `is ${bodyVersion} but If-Match says ${header}`);
  }
  const version = header ?? bodyVersion;
  if (version === undefined) {
    throw new AdminApiError('precondition_required', 'header.if-match: name the version you read (If-Match header or body "version") so a concurrent change is not overwritten', { field: 'header.if-match' });
  }
  return version;
}

export function versionConflict(resource: string, id: string, expected: number, current: number): AdminApiError {
  return new AdminApiError('version_conflict', `${resource} ${JSON.stringify(id)} is at version ${current}, not ${expected}: it changed since you read it; nothing was written`, {
    field: 'header.if-match',
    currentVersion: current,
  });
}

/** The table operations a versioned write needs (every configuration table has them). */
export interface VersionedTable<Row extends { version: number }> {
  findUnique(args: { where: { id: string } }): Promise<Row | null>;
  updateMany(args: { where: { id: string; version: number }; data: any }): Promise<{ count: number }>;
  deleteMany(args: { where: { id: string; version: number } }): Promise<{ count: number }>;
}

/** Updates row `id` if it is at `expected`, raising the version; returns the row before and after. */
export async function updateVersioned<Row extends { version: number }>(
  table: VersionedTable<Row>,
  resource: string,
  id: string,
  expected: number,
  data: Record<string, unknown>,
): Promise<{ before: Row; after: Row }> {
  const before = await table.findUnique({ where: { id } });
  if (!before) throw AdminApiError.notFound(resource, id);
  if (before.version !== expected) throw versionConflict(resource, id, expected, before.version);
  const { count } = await table.updateMany({ where: { id, version: expected }, data: { ...data, version: { increment: 1 } } });
  if (count === 0) {
    const now = await table.findUnique({ where: { id } });
    if (!now) throw AdminApiError.notFound(resource, id);
    throw versionConflict(resource, id, expected, now.version);
  }
  const after = await table.findUnique({ where: { id } });
  if (!after) throw AdminApiError.notFound(resource, id);
  return { before, after };
}

/** Deletes row `id` if it is at `expected`; returns the deleted row. */
export async function deleteVersioned<Row extends { version: number }>(table: VersionedTable<Row>, resource: string, id: string, expected: number): Promise<Row> {
  const before = await table.findUnique({ where: { id } });
  if (!before) throw AdminApiError.notFound(resource, id);
  if (before.version !== expected) throw versionConflict(resource, id, expected, before.version);
  const { count } = await table.deleteMany({ where: { id, version: expected } });
  if (count === 0) {
    const now = await table.findUnique({ where: { id } });
    if (!now) throw AdminApiError.notFound(resource, id);
    throw versionConflict(resource, id, expected, now.version);
  }
  return before;
}
