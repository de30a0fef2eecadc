import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { redisKeys } from '@conveyor/contracts';
import { createPrismaClient } from '@conveyor/persistence';
import { NATS_URL, REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { sample } from '../harness/metrics.js';
import type { RecordedRequest } from '../fakes/index.js';
import { callbacksFor, finalReply, send, sleep, text } from './pipeline-support.js';
import { replyText } from './runner-support.js';

/**
 * LangBot's message aggregation (`trigger.message-aggregation`) across replicas: messages of one
 * session that arrive within the delay become one query (one model call, one reply), whichever
 * orchestrator replica received them; other sessions are never merged; a killed orchestrator loses
 * none and answers none twice.
 */

/** The user turn of a model request, as the model got it. */
function userTurn(r: RecordedRequest): unknown {
  return r.body.messages?.filter((m) => m.role === 'user').at(-1)?.content;
}

/** Model requests whose user turn mentions any of `words`. */
function requestsAbout(sys: TestSystem, words: string[]): RecordedRequest[] {
  return sys.llm.requests.filter((r) => words.some((w) => JSON.stringify(userTurn(r) ?? '').includes(w)));
}

/**
 * LangBot's merged user turn for text messages: the chains joined with a Plain('\n') between two
 * messages, which PreContentFilterStage turns into one text (as LangBot's does), so the model gets one string.
 */
function mergedTurn(texts: string[]): string {
  return texts.join('\n');
}

/** The text of each final part of the reply to `replyTo` (a reply has exactly one). */
function finalText(sys: TestSystem, replyTo: string): string[] {
  return callbacksFor(sys, replyTo).filter((c) => c.json.is_final === true).map(replyText);
}

async function queryRecords(sys: TestSystem, session: string, count: number) {
  const prisma = createPrismaClient(sys.db.url);
  try {
    return await waitUntil(`${count} finished query records of ${session}`, async () => {
      const rows = await prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId: session }, orderBy: { receivedAt: 'asc' } });
      return rows.length === count && rows.every((r) => r.status === 'succeeded') ? rows : undefined;
    }, 20_000);
  } finally {
    await prisma.$disconnect();
  }
}

/** Every query on the bus was acknowledged: nothing is waiting to be delivered again. */
async function queriesDrained(sys: TestSystem): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    await waitUntil('the query stream drained', async () => (await jsm.streams.info(sys.topology.streams.queries.name)).state.messages === 0, 90_000, 200);
  } finally {
    await nc.close();
  }
}

describe('message aggregation on, two orchestrator replicas', () => {
  let sys: TestSystem;
  let redis: Redis;
  const DELAY_MS = 2_000;

  before(async () => {
    sys = await startTestSystem({
      startServices: false,
      pipelineConfig: { trigger: { 'message-aggregation': { enabled: true, delay: DELAY_MS / 1000 } } },
      // Short holds: a waiting message goes back to the bus quickly instead of sitting in a killed
      // replica; a short ack wait brings back what the killed replicas held in seconds, not 30.
      serviceEnv: { SESSION_WAIT_HOLD_MS: '500', ORCHESTRATOR_ACK_WAIT_MS: '5000' },
    });
    await Promise.all([
      sys.services.start('ingress'), sys.services.start('runner'), sys.services.start('dispatcher'),
      sys.services.start('orchestrator', {}, 'orchestrator-1'), sys.services.start('orchestrator', {}, 'orchestrator-2'),
    ]);
    redis = new Redis(REDIS_URL);
  });

  after(async () => {
    redis?.disconnect();
    await sys?.stop();
  });

  test('three messages within the delay: one model call with LangBot\'s merged text, one reply with exactly one final part', async () => {
    const session = uniqueName('agg');
    const ids: string[] = [];
    for (const t of ['first part', 'second part', 'third part']) ids.push(await send(sys, text(session, t)));
    const lastSent = Date.now();
    await finalReply(sys, ids[0], 30_000);
    const waited = Date.now() - lastSent;
    // Give a straggler (a second reply, a second model call) time to show up if merging were broken.
    await sleep(DELAY_MS + 500);

    const calls = requestsAbout(sys, ['first part', 'second part', 'third part']);
    assert.equal(calls.length, 1, 'one model call');
    assert.deepEqual(userTurn(calls[0]), mergedTurn(['first part', 'second part', 'third part']));
    assert.deepEqual(finalText(sys, ids[0]), ['Echo: first part\nsecond part\nthird part'], 'exactly one final part, the merged answer');
    assert.deepEqual(callbacksFor(sys, ids[1]), [], 'the merged messages get no reply of their own');
    assert.deepEqual(callbacksFor(sys, ids[2]), []);
    assert.ok(waited >= DELAY_MS - 100, `the reply waited out the delay after the newest message (${waited} ms)`);

    // The query log: the first message's query answered, the other two name it.
    const rows = await queryRecords(sys, session, 3);
    const head = rows.filter((r) => r.mergedInto === null);
    assert.equal(head.length, 1);
    assert.deepEqual(rows.filter((r) => r.mergedInto !== null).map((r) => r.mergedInto), [head[0].id, head[0].id]);
    const merge = sys.services.allLogs().split('\n').find((l) => l.includes('messages merged into one query') && l.includes(head[0].id));
    assert.ok(merge, 'the merge is logged');
    assert.match(merge, new RegExp(`"trace_id":"${head[0].traceId}"`), 'with the trace id of the query that answers');
    // Nothing stays stashed once the session is idle.
    const keys = redisKeys(sys.prefix);
    const ref = { botId: sys.botId, adapter: 'http-bot' as const, launcherType: 'person', launcherId: session };
    assert.equal(await redis.hlen(keys.sessionAggregatePending(ref)), 0);
    assert.equal(await redis.exists(keys.sessionAggregateMerged(ref, head[0].id)), 0);
    // The merge is counted.
    const metrics = await Promise.all(['orchestrator-1', 'orchestrator-2'].map(async (o) => (await fetch(`${sys.services.get(o).healthUrl}/metrics`)).text()));
    const counted = metrics.map((m) => sample(m, 'conveyor_aggregated_messages_total') ?? 0);
    assert.equal(counted[0] + counted[1], 2, 'two messages merged into another query');
  });

  test('messages of different sessions are never merged', async () => {
    const a = uniqueName('agg-a');
    const b = uniqueName('agg-b');
    const ids = {
      a1: await send(sys, text(a, 'alpha one')),
      b1: await send(sys, text(b, 'beta one')),
      a2: await send(sys, text(a, 'alpha two')),
      b2: await send(sys, text(b, 'beta two')),
    };
    await Promise.all([finalReply(sys, ids.a1, 30_000), finalReply(sys, ids.b1, 30_000)]);
    await sleep(DELAY_MS + 500);
    const calls = requestsAbout(sys, ['alpha', 'beta']).map(userTurn);
    assert.equal(calls.length, 2, 'one model call per session');
    assert.deepEqual(calls.find((c) => JSON.stringify(c).includes('alpha')), mergedTurn(['alpha one', 'alpha two']));
    assert.deepEqual(calls.find((c) => JSON.stringify(c).includes('beta')), mergedTurn(['beta one', 'beta two']));
    assert.equal(finalText(sys, ids.a1).length, 1);
    assert.equal(finalText(sys, ids.b1).length, 1);
    assert.deepEqual([...callbacksFor(sys, ids.a2), ...callbacksFor(sys, ids.b2)], []);
  });

  test('SIGKILL of every orchestrator while messages wait in the delay: the restarted one answers them merged, none lost, none twice', async () => {
    const session = uniqueName('agg-kill');
    const ref = { botId: sys.botId, adapter: 'http-bot' as const, launcherType: 'person', launcherId: session };
    const ids: string[] = [];
    for (const t of ['kill one', 'kill two', 'kill three']) ids.push(await send(sys, text(session, t)));
    // All three reached an orchestrator and wait in the delay (nothing ran yet).
    await waitUntil('three messages stashed', async () => (await redis.hlen(redisKeys(sys.prefix).sessionAggregatePending(ref))) === 3, 10_000, 10);
    assert.equal(requestsAbout(sys, ['kill']).length, 0, 'the delay has not passed yet');
    await Promise.all([sys.services.kill('orchestrator-1', 'SIGKILL'), sys.services.kill('orchestrator-2', 'SIGKILL')]);
    await sys.services.start('orchestrator', {}, 'orchestrator-1');

    await finalReply(sys, ids[0], 90_000);
    // Every copy the killed replicas held comes back (after the ack wait) and must be dropped, not answered.
    await queriesDrained(sys);
    await sleep(1_000);
    const calls = requestsAbout(sys, ['kill one', 'kill two', 'kill three']);
    assert.equal(calls.length, 1, 'one model call');
    assert.deepEqual(userTurn(calls[0]), mergedTurn(['kill one', 'kill two', 'kill three']));
    assert.deepEqual(finalText(sys, ids[0]), ['Echo: kill one\nkill two\nkill three'], 'exactly one final part');
    assert.deepEqual([...callbacksFor(sys, ids[1]), ...callbacksFor(sys, ids[2])], [], 'no reply of their own');
    const rows = await queryRecords(sys, session, 3);
    assert.equal(rows.filter((r) => r.mergedInto !== null).length, 2);
    // The session is free: its next message is answered on its own.
    const next = await send(sys, text(session, 'after the kill'));
    await finalReply(sys, next, 30_000);
    assert.deepEqual(userTurn(requestsAbout(sys, ['after the kill'])[0]), 'after the kill');
  });
});

describe('message aggregation off (LangBot\'s default)', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem();
  });

  after(async () => {
    await sys?.stop();
  });

  test('messages sent together are answered one by one, in order, as before', async () => {
    const session = uniqueName('noagg');
    const ids: string[] = [];
    for (const t of ['plain one', 'plain two', 'plain three']) ids.push(await send(sys, text(session, t)));
    for (const id of ids) await finalReply(sys, id, 30_000);
    const calls = requestsAbout(sys, ['plain']);
    assert.deepEqual(calls.map(userTurn), ['plain one', 'plain two', 'plain three'], 'one model call per message, in order');
    ids.forEach((id, i) => assert.deepEqual(finalText(sys, id), [`Echo: plain ${['one', 'two', 'three'][i]}`]));
    const finals = ids.map((id) => callbacksFor(sys, id).find((c) => c.json.is_final === true)!.n);
    assert.deepEqual([...finals].sort((x, y) => x - y), finals, 'replies in order');
    const rows = await queryRecords(sys, session, 3);
    assert.ok(rows.every((r) => r.mergedInto === null));
    assert.ok(!sys.services.allLogs().includes('messages merged into one query'));
  });
});
