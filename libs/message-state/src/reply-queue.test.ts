import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { redisKeys, type ReplyRoute } from '@conveyor/contracts';
import { nextCallbackSequence, ReplyQueue } from './reply-queue.js';
import { SessionLeases } from './session-leases.js';
import { RunAttempts } from './run-attempts.js';
import type { QueuedPart } from './reply-parts.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const TAKE = { leaseMs: 5_000, maxEntries: 64, gapMs: 15_000, stallMs: 60_000 };

function reply(sessionId: string) {
  const route: ReplyRoute = { botId: 'b1', adapter: 'http-bot', sessionId, launcherType: 'person', launcherId: sessionId, senderId: 'u', replyTo: 'in_x' };
  const part = (text: string, isFinal: boolean): QueuedPart => ({ route, reply: { message: [{ type: 'Plain', text }], isFinal, stream: false }, queryId: 'q', key: text });
  return { route, part };
}

/** What a failover's partial loss does: every key of the session back to what it was at `snapshot`. */
async function snapshot(keys: string[]): Promise<() => Promise<void>> {
  const saved = await Promise.all(keys.map(async (k) => [k, await redis.dumpBuffer(k)] as const));
  return async () => {
    for (const [k, dump] of saved) {
      await redis.del(k);
      if (dump) await redis.restore(k, 0, dump);
    }
  };
}

async function formBatch(q: ReplyQueue, route: ReplyRoute, queryId: string, text: string) {
  const { part } = reply(route.sessionId);
  assert.equal(await q.enqueue(route, queryId, 1, 0, [{ ...part(text, true), queryId }], { t: 'seal', queryId, terminal: true, route, attempt: 1, seq: 0 }), 'stored');
  const k = q.keys;
  const rollBack = await snapshot([k.reply(route, queryId), k.replySessionSender(route), k.replySessionSequence(route), k.replySessionReplies(route), k.replyActiveSessions(route)]);
  const taken = await q.take(route, 'replica-a', TAKE);
  assert.equal(taken.kind, 'batch');
  return { rollBack, taken };
}

const SHOWN_FINAL = { chunks: 0, open: false, last: '', finalSent: true, ended: true };
const events = (taken: Awaited<ReturnType<ReplyQueue['take']>>) => {
  assert.equal(taken.kind, 'batch');
  return { attempt: 1, lastSeq: 0, startedFrom: taken.kind === 'batch' ? taken.batch.numbering : { seq: 0, lastFinal: true } };
};

test('a late record of a batch whose take was lost changes nothing once the session was numbered since', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const { rollBack, taken } = await formBatch(q, route, queryId, 'the answer');
  await rollBack();
  // Meanwhile the session went on (its turn was ended, a later reply numbered 1 and 2).
  await redis.hset(q.keys.replySessionSequence(route), { seq: 2, final: 0 });
  assert.equal((await q.commit(route, queryId, 'replica-a', TAKE, SHOWN_FINAL, { seq: 1, lastFinal: true }, events(taken))).outcome, 'lost');
  assert.deepEqual(await redis.hgetall(q.keys.replySessionSequence(route)), { seq: '2', final: '0' }, 'the numbering is not set back');
  assert.equal(await redis.hexists(q.keys.reply(route, queryId), 'e:0'), 1, 'the event is left to the next take');
});

test('a batch sent after the take that formed it was lost is recorded: its events leave the reply, its numbers stay used', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const { rollBack, taken } = await formBatch(q, route, queryId, 'the answer');
  // The parts went out (callback number 1); then the master died before the take reached its replica.
  await rollBack();
  assert.equal(await redis.hexists(q.keys.reply(route, queryId), 'e:0'), 1, 'the event waits again');
  const { outcome } = await q.commit(route, queryId, 'replica-a', TAKE, SHOWN_FINAL, { seq: 1, lastFinal: true }, events(taken));
  assert.equal(outcome, 'idle', 'recorded as usual, nothing more to send');
  const state = await redis.hgetall(q.keys.reply(route, queryId));
  assert.equal(state['e:0'], undefined, 'the sent event is not taken again');
  assert.equal(state.closed, '1');
  assert.deepEqual(await redis.hgetall(q.keys.replySessionSequence(route)), { seq: '1', final: '1' });
  assert.deepEqual((await q.take(route, 'replica-b', TAKE)).kind, 'idle', 'a later take sends nothing twice');
});

test('when another replica formed its own batch of the rolled-back events, the batch is left to it', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const { rollBack, taken } = await formBatch(q, route, queryId, 'the answer');
  await rollBack();
  assert.equal((await q.take(route, 'replica-b', TAKE)).kind, 'batch');
  assert.equal((await q.commit(route, queryId, 'replica-a', TAKE, SHOWN_FINAL, { seq: 1, lastFinal: true }, events(taken))).outcome, 'lost');
  assert.equal(await redis.get(q.keys.replySessionSender(route)), 'replica-b', 'replica b keeps the session');
});

test('a batch another replica still holds is left to it (it resends it byte for byte)', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const { taken } = await formBatch(q, route, queryId, 'the answer');
  // The lease ran out and replica b holds the session with the same batch.
  await redis.set(q.keys.replySessionSender(route), 'replica-b', 'PX', 5_000);
  const before = await redis.hgetall(q.keys.replySessionSequence(route));
  assert.equal((await q.commit(route, queryId, 'replica-a', TAKE, SHOWN_FINAL, { seq: 1, lastFinal: true }, events(taken))).outcome, 'lost');
  assert.deepEqual(await redis.hgetall(q.keys.replySessionSequence(route)), before);
  assert.equal(await redis.hexists(q.keys.reply(route, queryId), 'batch'), 1);
});

test('deliver stores an event and takes it as the batch in the same call', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const seal = { t: 'seal' as const, queryId, terminal: true, route, attempt: 1, seq: 0 };
  const r = await q.deliver(route, queryId, 1, 0, [{ ...part('the answer', true), queryId }], seal, 'replica-a', TAKE);
  assert.equal(r.outcome, 'stored');
  assert.ok(r.outcome === 'stored' && r.taken.kind === 'batch');
  assert.equal(r.taken.batch.queryId, queryId);
  assert.deepEqual(r.taken.batch.entries.map((e) => e.t), ['part', 'seal']);
  assert.deepEqual(r.taken.batch.numbering, { seq: 0, lastFinal: true });
  assert.equal(await redis.get(q.keys.replySessionSender(route)), 'replica-a', 'the sender lease is this replica\'s');
  const again = await q.deliver(route, queryId, 1, 0, [{ ...part('the answer', true), queryId }], seal, 'replica-a', TAKE);
  assert.deepEqual(again, { outcome: 'duplicate' }, 'a redelivered event is neither stored nor taken');
});

test('deliver stores beside a replica that sends the session, and leaves the parts to it', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  await redis.set(q.keys.replySessionSender(route), 'replica-b', 'PX', 5_000);
  const r = await q.deliver(route, queryId, 1, 0, [{ ...part('first', false), queryId }], { t: 'seal', queryId, terminal: false, route, attempt: 1, seq: 0 }, 'replica-a', TAKE);
  assert.deepEqual(r, { outcome: 'stored', taken: { kind: 'busy' } });
  const taken = await q.take(route, 'replica-b', TAKE);
  assert.ok(taken.kind === 'batch' && taken.batch.entries.length === 2, 'the holder takes the stored event');
});

test('deliver refuses an older attempt and a reply that ended, taking nothing', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const seal = (attempt: number, seq: number, terminal: boolean) => ({ t: 'seal' as const, queryId, terminal, route, attempt, seq });
  assert.equal(await q.enqueue(route, queryId, 2, 0, [{ ...part('new', false), queryId }], seal(2, 0, false)), 'stored');
  assert.deepEqual(await q.deliver(route, queryId, 1, 3, [{ ...part('old', false), queryId }], seal(1, 3, false), 'replica-a', TAKE), { outcome: 'superseded' });
  assert.equal(await redis.get(q.keys.replySessionSender(route)), null, 'no lease taken');
  await redis.hset(q.keys.reply(route, queryId), 'closed', '1');
  assert.deepEqual(await q.deliver(route, queryId, 2, 1, [{ ...part('late', true), queryId }], seal(2, 1, true), 'replica-a', TAKE), { outcome: 'ended' });
});

test('a run\'s last event stored with its turn ended frees the session and its pipeline slot in the same call, once', async () => {
  const leases = new SessionLeases(redis, prefix);
  const q = new ReplyQueue(redis, prefix, leases);
  assert.equal(q.endsTurnWithLastEvent, true, 'one server holds every slot');
  const { route, part } = reply(`s-${randomUUID()}`);
  const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
  // Registered as the ingress registers an accepted message: settled from the start.
  const take = async (id: string, seq: number) => {
    await leases.register(route, id, seq);
    return leases.acquire(route, id, seq);
  };
  assert.equal(await take(first, 1), 'acquired');
  const lease = await leases.holder(route);
  assert.equal(lease, first);
  // A streamed part first: an event that is not the run's last ends nothing.
  assert.equal(await q.enqueue(route, first, 1, 0, [{ ...part('so far', false), queryId: first }], { t: 'seal', queryId: first, terminal: false, route, attempt: 1, seq: 0 }), 'stored');
  assert.equal(await leases.holder(route), first);
  const last = { t: 'seal' as const, queryId: first, terminal: true, route, attempt: 1, seq: 1, turnEnded: true };
  const r = await q.deliver(route, first, 1, 1, [{ ...part('the answer', true), queryId: first }], last, 'replica-a', TAKE);
  assert.ok(r.outcome === 'stored' && r.taken.kind === 'batch');
  assert.deepEqual(r.taken.batch.entries.filter((e) => e.t === 'seal').map((e) => e.t === 'seal' && e.turnEnded === true), [false, true], 'the seal says the turn ended with it');
  assert.equal(await leases.holder(route), null, 'the session is free');
  assert.equal(await redis.zscore(redisKeys(prefix).pipelineSlots(route), first), null, 'its pipeline slot is free');
  // The next message takes the session; the last event delivered again ends nothing of its turn.
  assert.equal(await take(second, 2), 'acquired');
  assert.deepEqual(await q.deliver(route, first, 1, 1, [{ ...part('the answer', true), queryId: first }], last, 'replica-a', TAKE), { outcome: 'duplicate' });
  assert.equal(await leases.holder(route), second, 'a redelivered last event leaves the next holder alone');
  // A replica of the previous release takes the batch and ends the turn again as it always did: the
  // release is the query's own, so the next holder keeps the session.
  await leases.finish(route, first);
  assert.equal(await leases.holder(route), second, 'ending a finished turn again changes nothing');
  // A finished query does not take the session again (its copy redelivered to the orchestrator).
  assert.equal(await leases.acquire(route, first, 1), 'finished');
  // The same through enqueue (a replica already sending the session).
  const sealed = { t: 'seal' as const, queryId: second, terminal: true, route, attempt: 1, seq: 0, turnEnded: true };
  assert.equal(await q.enqueue(route, second, 1, 0, [{ ...part('next answer', true), queryId: second }], sealed), 'stored');
  assert.equal(await leases.holder(route), null);
  assert.equal(await take(third, 3), 'acquired');
});

test("storing a run's last event forgets the run's attempts; a run started again after that adds nothing to the reply", async () => {
  const leases = new SessionLeases(redis, prefix);
  const q = new ReplyQueue(redis, prefix, leases);
  const attempts = new RunAttempts(redis, prefix);
  const keys = redisKeys(prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const [first, second] = [randomUUID(), randomUUID()];
  const traced = { traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 };
  for (const [id, seq] of [[first, 1], [second, 2]] as const) {
    await leases.register(route, id, seq);
    await attempts.start(id, traced);
  }
  assert.equal(await leases.acquire(route, first, 1), 'acquired');
  assert.equal((await attempts.start(first, traced)).attempt, 2, 'a restarted run: attempt 2, its span kept');
  const kept = async (id: string) => (await redis.exists(keys.runAttempts(id), keys.runAttemptSpan(id)));
  assert.equal(await kept(first), 2);
  // A streamed part is not the run's end: the attempts stay.
  assert.equal(await q.enqueue(route, first, 2, 0, [{ ...part('so far', false), queryId: first }], { t: 'seal', queryId: first, terminal: false, route, attempt: 2, seq: 0 }), 'stored');
  assert.equal(await kept(first), 2);
  const last = { t: 'seal' as const, queryId: first, terminal: true, route, attempt: 2, seq: 1, turnEnded: true };
  const r = await q.deliver(route, first, 2, 1, [{ ...part('the answer', true), queryId: first }], last, 'replica-a', TAKE);
  assert.equal(r.outcome, 'stored');
  assert.equal(await kept(first), 0, "the counter and the span are gone with the session's turn");
  assert.equal(await kept(second), 2, "another query's are untouched");
  // A copy of the run started now (its runner died before the ack) counts from 1 again: whatever it
  // produces is refused, the reply's last event is stored already.
  const again = await attempts.start(first);
  assert.deepEqual(again, { attempt: 1 }, 'numbered from 1, no span to link to');
  assert.deepEqual(await q.deliver(route, first, again.attempt, 0, [{ ...part('a second answer', true), queryId: first }], { t: 'seal', queryId: first, terminal: true, route, attempt: 1, seq: 0 }, 'replica-a', TAKE), { outcome: 'superseded' });
  // Through enqueue (a replica already sending the session) the same.
  assert.equal(await leases.acquire(route, second, 2), 'acquired');
  const sealed = { t: 'seal' as const, queryId: second, terminal: true, route, attempt: 1, seq: 0, turnEnded: true };
  assert.equal(await q.enqueue(route, second, 1, 0, [{ ...part('next answer', true), queryId: second }], sealed), 'stored');
  assert.equal(await kept(second), 0);
});

test('a seal marked turnEnded needs the session leases', async () => {
  const q = new ReplyQueue(redis, prefix);
  assert.equal(q.endsTurnWithLastEvent, false);
  const { route, part } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  await assert.rejects(q.enqueue(route, queryId, 1, 0, [{ ...part('x', true), queryId }], { t: 'seal', queryId, terminal: true, route, attempt: 1, seq: 0, turnEnded: true }), /needs a queue that ends session turns/);
});

test("a batch tells whether a call held for the session's reply was registered lately", async () => {
  const q = new ReplyQueue(redis, prefix);
  const deliverOne = async (sessionId: string) => {
    const { route, part } = reply(sessionId);
    const queryId = randomUUID();
    return q.deliver(route, queryId, 1, 0, [{ ...part('answer', true), queryId }], { t: 'seal', queryId, terminal: true, route, attempt: 1, seq: 0 }, 'replica-a', TAKE);
  };
  const plain = await deliverOne(`s-${randomUUID()}`);
  assert.ok(plain.outcome === 'stored' && plain.taken.kind === 'batch' && plain.taken.batch.heldCallMarked === false, 'no mark');
  const held = `s-${randomUUID()}`;
  await redis.set(q.keys.replyHeldCallMark(reply(held).route), 'ingress-1', 'PX', 10_000);
  const marked = await deliverOne(held);
  assert.ok(marked.outcome === 'stored' && marked.taken.kind === 'batch' && marked.taken.batch.heldCallMarked === true, 'the mark is reported');
});

test("callbacks number on from the session's count unless that would repeat a number their reply already used", () => {
  assert.deepEqual(nextCallbackSequence({ seq: 0, lastFinal: true }, false), { seq: 1, lastFinal: false }, 'a new reply starts at 1');
  assert.deepEqual(nextCallbackSequence({ seq: 3, lastFinal: false }, true, 3), { seq: 4, lastFinal: true }, 'the reply that numbered last goes on');
  assert.deepEqual(nextCallbackSequence({ seq: 4, lastFinal: true }, false), { seq: 1, lastFinal: false }, 'the next reply restarts after a final');
  assert.deepEqual(nextCallbackSequence({ seq: 7, lastFinal: false }, false), { seq: 8, lastFinal: false }, 'a reply after one that ended without a final counts on (LangBot)');
  assert.deepEqual(nextCallbackSequence({ seq: 20, lastFinal: true }, true, 3), { seq: 4, lastFinal: true }, 'another reply ended meanwhile: no restart at 1');
  assert.deepEqual(nextCallbackSequence({ seq: 2, lastFinal: false }, false, 5), { seq: 6, lastFinal: false }, 'another reply restarted the count below this one');
  assert.deepEqual(nextCallbackSequence({ seq: 20, lastFinal: false }, false, 3), { seq: 21, lastFinal: false }, 'the shared count is above: it goes on from there');
});

test('a commit keeps the highest number its reply used, and the next take hands it back', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const seal = (seq: number) => ({ t: 'seal' as const, queryId, terminal: false, route, attempt: 1, seq });
  assert.equal(await q.enqueue(route, queryId, 1, 0, [{ ...part('a', false), queryId }], seal(0)), 'stored');
  const first = await q.take(route, 'replica-a', TAKE);
  assert.equal(first.kind === 'batch' && first.batch.replySeq, 0, 'nothing numbered yet');
  const shown = { chunks: 0, open: false, last: '', finalSent: false, ended: false };
  await q.commit(route, queryId, 'replica-a', TAKE, shown, { seq: 1, lastFinal: false }, { ...events(first), replySeq: 1 });
  assert.equal(await q.enqueue(route, queryId, 1, 1, [{ ...part('b', false), queryId }], seal(1)), 'stored');
  const second = await q.take(route, 'replica-a', TAKE);
  assert.equal(second.kind === 'batch' && second.batch.replySeq, 1, 'the reply used callback 1');
});

test('a reply that ended keeps only what refuses its later events, in a compact hash, for the rest of its TTL', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const queryId = randomUUID();
  const key = q.keys.reply(route, queryId);
  // A long part turns the reply's hash into Redis's table encoding, as a real answer does.
  const long = 'x'.repeat(500);
  const seal = (seq: number, terminal: boolean) => ({ t: 'seal' as const, queryId, terminal, route, attempt: 1, seq });
  assert.equal(await q.enqueue(route, queryId, 1, 0, [{ ...part(long, false), queryId }], seal(0, false)), 'stored');
  const first = await q.take(route, 'replica-a', TAKE);
  await q.commit(route, queryId, 'replica-a', TAKE, { chunks: 1, open: true, last: JSON.stringify([{ type: 'Plain', text: long }]), finalSent: false, ended: false }, { seq: 1, lastFinal: false }, { ...events(first), replySeq: 1 });
  assert.equal(await redis.object('ENCODING', key), 'hashtable');
  const open = (await redis.memory('USAGE', key)) ?? 0;
  assert.equal(await q.enqueue(route, queryId, 1, 1, [{ ...part(`${long}!`, true), queryId }], seal(1, true)), 'stored');
  const second = await q.take(route, 'replica-a', TAKE);
  assert.ok(second.kind === 'batch');
  await q.commit(route, queryId, 'replica-a', TAKE, { chunks: 1, open: false, last: JSON.stringify([{ type: 'Plain', text: `${long}!` }]), finalSent: true, ended: true }, { seq: 2, lastFinal: true }, { attempt: 1, lastSeq: 1, startedFrom: second.batch.numbering, replySeq: 2 });
  assert.deepEqual(await redis.hgetall(key), { closed: '1', attempt: '1', next: '2', final: '1', sequence: '2' });
  assert.equal(await redis.object('ENCODING', key), 'listpack');
  const ttl = await redis.pttl(key);
  assert.ok(ttl > 5 * 3600_000, `the state's TTL stays (${ttl} ms left)`);
  const closed = (await redis.memory('USAGE', key)) ?? Infinity;
  assert.ok(closed * 4 < open, `${closed} bytes closed, ${open} while it streamed`);
  // What it answers for: later events refused, every event of the reply passed.
  assert.equal(await q.enqueue(route, queryId, 2, 0, [{ ...part('again', true), queryId }], { ...seal(0, true), attempt: 2 }), 'ended');
  assert.equal(await q.passed(route, queryId, 1, 1), 'passed');
  assert.equal(await q.admits(route, queryId, 3), false);
});

test('a commit that leaves more to send takes the session\'s next batch in the same call', async () => {
  const q = new ReplyQueue(redis, prefix);
  const { route, part } = reply(`s-${randomUUID()}`);
  const [first, second] = [randomUUID(), randomUUID()];
  const seal = (queryId: string) => ({ t: 'seal' as const, queryId, terminal: true, route, attempt: 1, seq: 0 });
  assert.equal(await q.enqueue(route, first, 1, 0, [{ ...part('one', true), queryId: first }], seal(first)), 'stored');
  const taken = await q.take(route, 'replica-a', TAKE);
  assert.ok(taken.kind === 'batch' && taken.batch.queryId === first);
  // The session's next reply arrives while the first's batch goes out.
  assert.equal(await q.enqueue(route, second, 1, 0, [{ ...part('two', true), queryId: second }], seal(second)), 'stored');
  const committed = await q.commit(route, first, 'replica-a', TAKE, SHOWN_FINAL, { seq: 1, lastFinal: true }, events(taken));
  assert.equal(committed.outcome, 'more');
  assert.ok(committed.outcome === 'more' && committed.taken.kind === 'batch' && committed.taken.batch.queryId === second, 'the second reply\'s batch, taken with the commit');
  assert.equal(await redis.get(q.keys.replySessionSender(route)), 'replica-a', 'the lease is kept for it');
  const again = await q.take(route, 'replica-a', TAKE);
  assert.ok(again.kind === 'batch' && again.batch.queryId === second, 'a take under the same lease hands the same batch back');
  assert.deepEqual(again.batch.entries, committed.taken.batch.entries);
});
