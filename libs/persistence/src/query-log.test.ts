import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
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
