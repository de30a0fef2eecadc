import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PreparedStatements } from './prepared-statements.js';
import { createTempDatabase, type TempDatabase } from './testing/temp-database.js';

let temp: TempDatabase;
const pools: pg.Pool[] = [];
before(async () => {
  temp = await createTempDatabase({ migrated: false });
});
after(async () => {
  for (const p of pools) await p.end();
  await temp.drop();
});

/** One connection, so every statement meets the server session the previous one left. */
function onePool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: temp.url, max: 1 });
  // The database is dropped WITH (FORCE) at the end: a connection the server ends then is expected,
  // not the test's failure (an idle client's error would otherwise be uncaught).
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}

const preparedNames = async (pool: pg.Pool) =>
  (await pool.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);

test('a statement is prepared once per connection under a name its text decides, and runs with its values', async () => {
  const pool = onePool();
  const statements = new PreparedStatements(pool);
  const add = 'SELECT $1::int + $2::int AS sum';
  assert.deepEqual((await statements.query<{ sum: number }>(add, [1, 2])).rows, [{ sum: 3 }]);
  assert.deepEqual((await statements.query<{ sum: number }>(add, [40, 2])).rows, [{ sum: 42 }]);
  await statements.query('SELECT $1::text AS echo', ['x']);
  const names = await preparedNames(pool);
  assert.equal(names.length, 2, 'one prepared statement per text');
  for (const name of names) assert.match(name, /^cv_[0-9a-f]{24}$/);
  // Another process with the same text names it the same: the name is the text's, not the caller's.
  const other = onePool();
  await new PreparedStatements(other).query(add, [0, 0]);
  assert.ok((await preparedNames(other)).every((n) => names.includes(n)));
  assert.equal(statements.enabled, true);
});

test('an error of the statement itself is the caller\'s, and statements stay prepared', async () => {
  const statements = new PreparedStatements(onePool());
  await assert.rejects(statements.query('SELECT 1 / $1::int AS q', [0]), (err: unknown) => (err as { code?: string }).code === '22012');
  assert.equal(statements.enabled, true);
});

test('a server session that lost its prepared statements (as behind a pooler without their support) turns them off: the statement runs unnamed, once told', async () => {
  const pool = onePool();
  const told: unknown[] = [];
  const statements = new PreparedStatements(pool, (err) => told.push(err));
  const text = 'SELECT $1::int * 2 AS doubled';
  await statements.query(text, [1]);
  // The client still believes the statement is prepared and sends only a bind; the server has none.
  await pool.query('DEALLOCATE ALL');
  assert.deepEqual((await statements.query<{ doubled: number }>(text, [21])).rows, [{ doubled: 42 }]);
  assert.equal(statements.enabled, false);
  assert.equal(told.length, 1);
  assert.equal((told[0] as { code?: string }).code, '26000');
  await statements.query(text, [2]);
  await statements.query('SELECT $1::int AS again', [3]);
  assert.deepEqual(await preparedNames(pool), [], 'nothing is prepared any more');
  assert.equal(told.length, 1, 'told once');
});

test('a name the server session already holds (another client prepared it there) turns them off too', async () => {
  const text = 'SELECT $1::int + 1 AS next';
  const elsewhere = onePool();
  await new PreparedStatements(elsewhere).query(text, [1]);
  const [name] = await preparedNames(elsewhere);
  // A server session in which another client already prepared the name, as a pooler hands it over.
  const session = new pg.Client({ connectionString: temp.url });
  session.on('error', () => undefined);
  await session.connect();
  try {
    await session.query(`PREPARE "${name}" AS SELECT 1`);
    const told: unknown[] = [];
    const statements = new PreparedStatements(session, (err) => told.push(err));
    assert.deepEqual((await statements.query<{ next: number }>(text, [41])).rows, [{ next: 42 }]);
    assert.equal(statements.enabled, false);
    assert.deepEqual(told.map((err) => (err as { code?: string }).code), ['42P05']);
  } finally {
    await session.end();
  }
});
