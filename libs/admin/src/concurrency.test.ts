import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deleteVersioned, expectedVersion, updateVersioned, type VersionedTable } from './concurrency.js';
import { AdminApiError } from './errors.js';

interface Row { id: string; name: string; version: number }

/** A table with Postgres' semantics for these calls: the WHERE on version decides, atomically. */
function table(rows: Row[]): VersionedTable<Row> & { rows: Row[] } {
  return {
    rows,
    async findUnique({ where }) {
      const row = rows.find((r) => r.id === where.id);
      return row ? { ...row } : null;
    },
    async updateMany({ where, data }) {
      const row = rows.find((r) => r.id === where.id && r.version === where.version);
      if (!row) return { count: 0 };
      Object.assign(row, { ...data, version: row.version + data.version.increment });
      return { count: 1 };
    },
    async deleteMany({ where }) {
      const i = rows.findIndex((r) => r.id === where.id && r.version === where.version);
      if (i < 0) return { count: 0 };
      rows.splice(i, 1);
      return { count: 1 };
    },
  };
}

const codeOf = async (p: Promise<unknown>) => p.then(() => 'no error', (err: unknown) => (err instanceof AdminApiError ? `${err.code} ${err.statusCode}` : String(err)));

test('the expected version comes from If-Match (quoted, weak or bare) or the body; they must agree; neither is 428', () => {
  assert.equal(expectedVersion('"3"', undefined), 3);
  assert.equal(expectedVersion('W/"4"', undefined), 4);
  assert.equal(expectedVersion('5', 5), 5);
  assert.equal(expectedVersion(undefined, 6), 6);
  assert.throws(() => expectedVersion('"3"', 4), (err: AdminApiError) => err.code === 'validation_failed' && err.details.field === 'body.version');
  assert.throws(() => expectedVersion('abc', undefined), (err: AdminApiError) => err.code === 'validation_failed' && err.details.field === 'header.if-match');
  assert.throws(() => expectedVersion(undefined, undefined), (err: AdminApiError) => err.code === 'precondition_required' && err.statusCode === 428);
});

test('a write at the current version succeeds and raises it; a stale one is 409 with the current version and changes nothing', async () => {
  const t = table([{ id: 'a', name: 'one', version: 1 }]);
  const { before, after } = await updateVersioned(t, 'model', 'a', 1, { name: 'two' });
  assert.deepEqual([before.version, after.version, after.name], [1, 2, 'two']);
  const stale = updateVersioned(t, 'model', 'a', 1, { name: 'lost' });
  await assert.rejects(stale, (err: AdminApiError) => err.code === 'version_conflict' && err.statusCode === 409 && err.details.currentVersion === 2);
  assert.deepEqual(t.rows, [{ id: 'a', name: 'two', version: 2 }]);
});

test('of two writers holding the same version, exactly one wins', async () => {
  const t = table([{ id: 'a', name: 'one', version: 1 }]);
  const outcomes = await Promise.all([codeOf(updateVersioned(t, 'model', 'a', 1, { name: 'x' })), codeOf(updateVersioned(t, 'model', 'a', 1, { name: 'y' }))]);
  assert.deepEqual(outcomes.sort(), ['no error', 'version_conflict 409']);
  assert.equal(t.rows[0].version, 2);
});

test('a stale delete is 409 and keeps the row; an unknown id is 404', async () => {
  const t = table([{ id: 'a', name: 'one', version: 2 }]);
  assert.equal(await codeOf(deleteVersioned(t, 'bot', 'a', 1)), 'version_conflict 409');
  assert.equal(t.rows.length, 1);
  assert.equal(await codeOf(deleteVersioned(t, 'bot', 'missing', 1)), 'not_found 404');
  assert.equal((await deleteVersioned(t, 'bot', 'a', 2)).name, 'one');
  assert.equal(t.rows.length, 0);
});
