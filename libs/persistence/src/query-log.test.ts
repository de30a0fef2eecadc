import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { useTempDatabase } from './testing/index.js';
import { QueryLog } from './query-log.js';

const database = useTempDatabase();

test('texts Postgres cannot store (NUL, lone surrogates) are made storable, and the whole group is written', async () => {
  const errors: unknown[] = [];
  const log = new QueryLog(database().pool, (err) => errors.push(err));
  const odd = randomUUID();
  const plain = randomUUID();
  const start = (id: string, launcherId: string) => ({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId, receivedAt: new Date(), attempt: 1 });
  log.running(start(odd, 'al\u0000ice \ud800'));
  log.running(start(plain, 'bob'));
  await log.flush();
  // A model's error text, as the runner records it: a provider's body can hold anything.
  log.failed(odd, 'all 1 models failed: 429 E{#hx\u0000../|jB O \udc00');
  log.succeeded(plain);
  await log.flush();
  assert.deepEqual(errors, []);
  const rows = await database().prisma.queryRecord.findMany({ where: { id: { in: [odd, plain] } }, orderBy: { launcherId: 'asc' } });
  assert.deepEqual(rows.map((r) => [r.launcherId, r.status, r.error]), [
    ['alice \uFFFD', 'failed', 'all 1 models failed: 429 E{#hx../|jB O \uFFFD'],
    ['bob', 'succeeded', null],
  ]);
});

test('an error cut to its bound does not leave half a surrogate pair', async () => {
  const log = new QueryLog(database().pool);
  const id = randomUUID();
  log.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'carol', receivedAt: new Date(), attempt: 1 });
  log.failed(id, `${'x'.repeat(3_999)}😀 and more`);
  await log.flush();
  const row = await database().prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  assert.equal(row.status, 'failed');
  assert.equal(row.error, `${'x'.repeat(3_999)}\uFFFD`);
});

test('how a query ended: null while running; a failure keeps the number of the run\'s last event', async () => {
  const log = new QueryLog(database().pool);
  const id = randomUUID();
  log.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'dave', receivedAt: new Date(), attempt: 2 });
  await log.flush();
  assert.equal(await log.finished(id), null);
  log.failed(id, 'the model failed', { attempt: 2, seq: 7 });
  await log.flush();
  assert.deepEqual(await log.finished(id), { status: 'failed', done: { attempt: 2, seq: 7 } });
  assert.equal(await log.isFinished(id), true);
});

test('a merged message is succeeded and names the query that answered it, whether its own start is logged before or after', async () => {
  const log = new QueryLog(database().pool);
  const head = randomUUID();
  const before = randomUUID();
  const afterwards = randomUUID();
  const start = (id: string, attempt: number) => ({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'erin', receivedAt: new Date(), attempt });
  log.running(start(before, 1));
  await log.flush();
  log.merged(start(before, 0), head);
  log.merged(start(afterwards, 0), head);
  await log.flush();
  // The merged message's own (later) delivery logs its start: it stays answered.
  log.running(start(afterwards, 2));
  await log.flush();
  const rows = await database().prisma.queryRecord.findMany({ where: { id: { in: [before, afterwards] } } });
  assert.deepEqual(rows.map((r) => [r.status, r.mergedInto, r.finishedAt !== null]), [['succeeded', head, true], ['succeeded', head, true]]);
  assert.equal(await log.isFinished(afterwards), true, 'a redelivered copy of it is recognised as done');
});

test('whether a run ended for good a while ago: its recorded turn or its failure, not the orchestrator\'s hand-over', async () => {
  const log = new QueryLog(database().pool);
  const start = (id: string) => ({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'erin', receivedAt: new Date(), attempt: 1 });
  const [handedOver, turnRecorded, failed, running] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  for (const id of [handedOver, turnRecorded, failed, running]) log.running(start(id));
  await log.flush();
  // The orchestrator marks a query succeeded when it hands the run over; the runner's turn comes later.
  log.succeeded(handedOver);
  log.failed(failed, 'the model failed');
  await log.flush();
  await database().pool.query(`UPDATE "QueryRecord" SET "status" = 'succeeded', "finishedAt" = now(), "doneAttempt" = 1, "doneSeq" = 3 WHERE "id" = $1`, [turnRecorded]);
  assert.equal(await log.runEndedBefore(turnRecorded, 60_000), false, 'ended, but just now');
  assert.equal(await log.runEndedBefore(turnRecorded, 0), true);
  assert.equal(await log.runEndedBefore(failed, 0), true);
  assert.equal(await log.runEndedBefore(handedOver, 0), false, 'handed over to the runner, not ended');
  assert.equal(await log.runEndedBefore(running, 0), false);
  assert.equal(await log.runEndedBefore(randomUUID(), 0), false, 'unknown');
});

test('a redelivered query records its stages, run and delivery again without duplicating its timeline', async () => {
  const log = new QueryLog(database().pool);
  const id = randomUUID();
  const start = { id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'erin', receivedAt: new Date(), attempt: 1 };
  const run = (ms: number) => ({ runner: 'local-agent', model: 'm', modelCalls: 1, inputTokens: 3, outputTokens: 4, cost: null, timing: { stage: 'run local-agent', at: 2_000, ms } });
  // The first attempt: stages, a failed run (its timing on the failure), a delivery.
  log.running(start);
  log.timeline(id, [{ stage: 'PreProcessor', at: 1_000, ms: 5 }, { stage: 'MessageProcessor', at: 1_005, ms: 50 }]);
  log.failed(id, 'the runner died', null, run(40));
  log.timeline(id, [{ stage: 'deliver http-bot', at: 3_000, ms: 9 }]);
  await log.flush();
  // JetStream delivers it again: every step again, some in one group commit with the start.
  log.running({ ...start, attempt: 2 });
  log.timeline(id, [{ stage: 'PreProcessor', at: 5_000, ms: 6 }, { stage: 'MessageProcessor', at: 5_006, ms: 60 }]);
  await log.flush();
  log.failed(id, 'the runner died again', null, run(41));
  log.timeline(id, [{ stage: 'deliver http-bot', at: 7_000, ms: 8 }]);
  log.timeline(id, [{ stage: 'deliver http-bot', at: 7_100, ms: 7 }]);
  await log.flush();
  const row = await database().prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  // The timeline's reader orders steps by their start; the stored order is the writes'.
  assert.deepEqual((row.stages as { at: number }[]).sort((a, b) => a.at - b.at), [
    { stage: 'run local-agent', at: 2_000, ms: 41 },
    { stage: 'PreProcessor', at: 5_000, ms: 6 },
    { stage: 'MessageProcessor', at: 5_006, ms: 60 },
    { stage: 'deliver http-bot', at: 7_100, ms: 7 },
  ]);
  // Two steps of one stage in one write (a stage that ran twice) both stay.
  log.timeline(id, [{ stage: 'deliver http-bot', at: 8_000, ms: 1 }, { stage: 'deliver http-bot', at: 8_001, ms: 2 }]);
  await log.flush();
  const again = await database().prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  assert.deepEqual((again.stages as { stage: string; at: number }[]).filter((s) => s.stage === 'deliver http-bot').map((s) => s.at), [8_000, 8_001]);
});

test('a start and its timeline in one group are one statement; a timeline after the start is written as before', async () => {
  const pool = database().pool;
  const statements: string[] = [];
  // The real pool, its statements counted.
  const counted = new Proxy(pool, {
    get: (target, key, receiver) =>
      key === 'query' ? (text: string, values?: unknown[]) => (statements.push(text), target.query(text, values)) : Reflect.get(target, key, receiver),
  });
  const log = new QueryLog(counted);
  const together = randomUUID();
  const apart = randomUUID();
  const start = (id: string) => ({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'gina', receivedAt: new Date(), attempt: 1 });
  log.running(start(together));
  log.timeline(together, [{ stage: 'PreProcessor', at: 1_000, ms: 5 }]);
  await log.flush();
  assert.equal(statements.length, 1);
  assert.match(statements[0]!, /^INSERT INTO "QueryRecord"/);
  log.running(start(apart));
  await log.flush();
  log.timeline(apart, [{ stage: 'PreProcessor', at: 2_000, ms: 6 }]);
  await log.flush();
  assert.equal(statements.length, 3);
  const rows = await database().prisma.queryRecord.findMany({ where: { id: { in: [together, apart] } } });
  const stagesOf = (id: string) => rows.find((r) => r.id === id)?.stages;
  assert.deepEqual(stagesOf(together), [{ stage: 'PreProcessor', at: 1_000, ms: 5 }]);
  assert.deepEqual(stagesOf(apart), [{ stage: 'PreProcessor', at: 2_000, ms: 6 }]);
  assert.ok(rows.every((r) => r.status === 'running'));
});

test('a start logged after the run\'s end created the record fills in the arrival and start, and leaves it succeeded', async () => {
  const log = new QueryLog(database().pool);
  const id = randomUUID();
  // The run's end writes a record of its own when none is there yet (ConversationStore.completeTurn).
  await database().pool.query(
    `INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "receivedAt", "status", "finishedAt") VALUES ($1, 'bot-1', 'person', 'hana', now(), 'succeeded', now())`,
    [id],
  );
  const receivedAt = new Date(Date.now() - 60_000);
  log.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'hana', receivedAt, attempt: 1 });
  log.timeline(id, [{ stage: 'PreProcessor', at: receivedAt.getTime() + 5, ms: 1 }]);
  await log.flush();
  const row = await database().prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  assert.equal(row.status, 'succeeded');
  assert.equal(row.pipelineId, 'p');
  assert.equal(row.receivedAt.getTime(), receivedAt.getTime());
  assert.ok(row.startedAt, 'the start time is recorded');
  assert.deepEqual(row.stages, [{ stage: 'PreProcessor', at: receivedAt.getTime() + 5, ms: 1 }]);
});

test('a start and the hand-over\'s success in one group are one row version; a record already failed stays failed', async () => {
  const log = new QueryLog(database().pool);
  const [handed, failedFirst, later]: string[] = [randomUUID(), randomUUID(), randomUUID()];
  // A bot of its own per query, to count each one's rollup deltas.
  const botOf = new Map<string, string>([handed, failedFirst, later].map((id) => [id, `bot-${id}`]));
  const start = (id: string) => ({ id, botId: botOf.get(id)!, pipelineId: 'p', launcherType: 'person', launcherId: 'ivy', receivedAt: new Date(Date.now() - 1_000), attempt: 1 });
  // The runner recorded a failure before the orchestrator's entries came in (a quick run, a slow group).
  await database().pool.query(
    `INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "receivedAt", "status", "error", "finishedAt") VALUES ($1, $2, 'person', 'ivy', now(), 'failed', 'the model failed', now())`,
    [failedFirst, botOf.get(failedFirst)],
  );
  for (const id of [handed, failedFirst]) {
    log.running(start(id));
    log.timeline(id, [{ stage: 'PreProcessor', at: Date.now(), ms: 1 }]);
    log.succeeded(id);
  }
  log.running(start(later));
  await log.flush();
  log.succeeded(later);
  await log.flush();
  const { rows } = await database().pool.query<{ id: string; status: string; error: string | null; finished: boolean; stages: unknown }>(
    `SELECT "id", "status", "error", "finishedAt" IS NOT NULL AS "finished", "stages" FROM "QueryRecord" WHERE "id" = ANY ($1)`,
    [[handed, failedFirst, later]],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.deepEqual([handed, failedFirst, later].map((id) => { const r = byId.get(id)!; return [r.status, r.error, r.finished]; }), [
    ['succeeded', null, true],
    ['failed', 'the model failed', true],
    ['succeeded', null, true],
  ]);
  assert.equal(JSON.stringify(byId.get(handed)!.stages).includes('PreProcessor'), true, 'the timeline is written with them');
  // Every row version the rollup counts leaves deltas: the handed-over query one (its insert), the query
  // whose success came in a later group three (its insert, then the update's old and new rows).
  const deltas = async (id: string) =>
    (await database().pool.query<{ sign: number; succeeded: number; failed: number }>(`SELECT "sign", "succeeded", "failed" FROM "QueryRollupDelta" WHERE "botId" = $1`, [botOf.get(id)])).rows;
  const counted = (ds: { sign: number; succeeded: number; failed: number }[]) => ({ succeeded: ds.reduce((n, d) => n + d.sign * d.succeeded, 0), failed: ds.reduce((n, d) => n + d.sign * d.failed, 0) });
  const [h, f, l] = [await deltas(handed), await deltas(failedFirst), await deltas(later)];
  assert.equal(h.length, 1);
  assert.equal(l.length, 3);
  assert.deepEqual([counted(h), counted(f), counted(l)], [{ succeeded: 1, failed: 0 }, { succeeded: 0, failed: 1 }, { succeeded: 1, failed: 0 }]);
});

test('a run started again raises the record\'s attempt, never lowers it', async () => {
  const log = new QueryLog(database().pool);
  const id = randomUUID();
  log.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'dan', receivedAt: new Date(), attempt: 1 });
  log.attempt(id, 3);
  await log.flush();
  log.attempt(id, 2);
  log.attempt(randomUUID(), 2);
  await log.flush();
  const row = await database().prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  assert.equal(row.attempt, 3);
});

test('two processes\' query logs updating the same records in different orders do not deadlock, and nothing is lost', async () => {
  // The orchestrator and the dispatcher each write their group of timelines and ends in one statement
  // per kind. Rows locked in different orders deadlock, and Postgres fails one of the statements after
  // `deadlock_timeout`: its whole group would be lost.
  const errors: unknown[] = [];
  const orchestrator = new QueryLog(database().pool, (err) => errors.push(err));
  const dispatcher = new QueryLog(database().pool, (err) => errors.push(err));
  const count = 400;
  for (let round = 0; round < 5; round++) {
    const ids = Array.from({ length: count }, () => randomUUID());
    // Started in a random order, so the table's physical order is neither the ids' nor the reverse.
    for (const id of [...ids].sort(() => Math.random() - 0.5)) {
      orchestrator.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'locks', receivedAt: new Date(), attempt: 1 });
    }
    await orchestrator.flush();
    // A redelivered copy's start (an insert that finds the record) with its stages, in one order; the
    // replies' ends in the other.
    const ascending = [...ids].sort();
    for (const id of [...ascending].reverse()) {
      orchestrator.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'locks', receivedAt: new Date(), attempt: 2 });
      orchestrator.timeline(id, [{ stage: 'PreProcessor', at: Date.now(), ms: 1 }]);
    }
    for (const id of ascending) {
      dispatcher.timeline(id, [{ stage: 'SendResponseBackStage', at: Date.now(), ms: 1 }]);
      dispatcher.succeeded(id);
    }
    await Promise.all([orchestrator.flush(), dispatcher.flush()]);
    assert.deepEqual(errors, [], `round ${round}: a group was lost`);
    const rows = await database().prisma.queryRecord.findMany({ where: { id: { in: ids } }, select: { status: true, stages: true } });
    const complete = rows.filter((r) => r.status === 'succeeded' && ['PreProcessor', 'SendResponseBackStage'].every((s) => JSON.stringify(r.stages).includes(s)));
    assert.equal(complete.length, count, `round ${round}`);
  }
});

test('a group the database refuses for the moment (a lock it cannot take) is written again, and nothing is lost', async () => {
  const errors: unknown[] = [];
  // Connections that give up on a lock after 50 ms (55P03), as a deadlock or a restart fails a statement.
  const impatient = new pg.Pool({ connectionString: database().pool.options.connectionString, max: 2, options: '-c lock_timeout=50' });
  after(() => impatient.end());
  // The updates' statements, each time one goes out (they lock their rows first: `FOR UPDATE`).
  let updates = 0;
  const log = new QueryLog({ query: (text, values) => ((updates += text.includes('FOR UPDATE') ? 1 : 0), impatient.query(text, values)) }, (err) => errors.push(err));
  const id = randomUUID();
  log.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'patient', receivedAt: new Date(), attempt: 1 });
  await log.flush();
  const locker = await database().pool.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM "QueryRecord" WHERE "id" = $1 FOR UPDATE', [id]);
    log.timeline(id, [{ stage: 'SendResponseBackStage', at: Date.now(), ms: 1 }]);
    const written = log.flush();
    for (const deadline = Date.now() + 30_000; updates < 2; ) {
      assert.ok(Date.now() < deadline, 'the refused group was tried again');
      await new Promise((r) => setTimeout(r, 10));
    }
    await locker.query('ROLLBACK');
    await written;
  } finally {
    locker.release();
  }
  assert.deepEqual(errors, []);
  const row = await database().prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  assert.match(JSON.stringify(row.stages), /SendResponseBackStage/);
});

test('a value Postgres refuses loses only the entries of its query: the rest of the group is written', async () => {
  const lost: { err: unknown; queryIds: string[] }[] = [];
  const log = new QueryLog(database().pool, (err, queryIds) => lost.push({ err, queryIds }));
  const ids = Array.from({ length: 6 }, () => randomUUID());
  const bad = ids[3];
  for (const id of ids) log.running({ id, botId: 'bot-1', pipelineId: 'p', launcherType: 'person', launcherId: 'frank', receivedAt: new Date(), attempt: 1 });
  await log.flush();
  for (const id of ids) {
    // A provider that reports more tokens than the column holds (integer out of range).
    const inputTokens = id === bad ? 2 ** 31 : 12;
    log.failed(id, 'the model failed', null, { runner: 'local-agent', model: 'm', modelCalls: 1, inputTokens, outputTokens: 3, cost: null });
    log.timeline(id, [{ stage: 'run', at: Date.now(), ms: 5 }]);
  }
  await log.flush();
  assert.equal(lost.length, 1, 'one failure reported');
  assert.deepEqual(lost[0].queryIds, [bad]);
  assert.equal((lost[0].err as { code?: string }).code, '22003');
  const rows = await database().prisma.queryRecord.findMany({ where: { id: { in: ids } } });
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const id of ids.filter((i) => i !== bad)) {
    const row = byId.get(id)!;
    assert.equal(row.status, 'failed', 'the other queries\' ends are written');
    assert.equal(row.inputTokens, 12);
    assert.deepEqual((row.stages as { stage: string }[]).map((s) => s.stage), ['run']);
  }
  assert.equal(byId.get(bad)!.status, 'running', 'the refused end is the one entry not written');
});
