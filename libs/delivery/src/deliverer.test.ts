import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisKeys, type ReplyRoute } from '@conveyor/contracts';
import { SessionLeases } from '@conveyor/message-state';
import { Deliverer } from './deliverer.js';
import { planBatch } from './coalesce.js';
import type { OutboundReply, PlatformAdapter, ReplyRef } from './types.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const route = (sessionId: string): ReplyRoute => ({ botId: 'b1', adapter: 'http-bot', sessionId, launcherType: 'person', launcherId: sessionId, senderId: sessionId, replyTo: 'in_x' });

function recorder(delayMs = 0) {
  const seen: { text: string; isFinal: boolean; stream: boolean; ordinal: number }[] = [];
  const adapter: PlatformAdapter = {
    name: 'http-bot',
    async deliver(_r, reply: OutboundReply, ctx) {
      if (delayMs) await delay(delayMs);
      seen.push({ text: (reply.message[0] as { text: string })?.text ?? '', isFinal: reply.isFinal, stream: reply.stream, ordinal: ctx.chunkOrdinal });
      return { delivered: true };
    },
  };
  return { seen, adapter };
}

const chunk = (text: string, isFinal = false): OutboundReply => ({ message: [{ type: 'Plain', text }], isFinal, stream: true });

async function handle(d: Deliverer, ref: ReplyRef, reply: OutboundReply | null) {
  await d.withReplyRef(ref, async () => { if (reply) await d.send(ref.route, reply); });
}

async function settle(...ds: Deliverer[]) {
  for (let i = 0; i < 50; i++) {
    await Promise.all(ds.map((d) => d.idle()));
    await delay(20);
    if (ds.every((d) => (d as any).draining.size === 0)) return;
  }
}

test('planBatch skips streamed snapshots superseded in the same batch, never finals or whole replies', () => {
  const p = (text: string, stream: boolean, isFinal: boolean) => ({ t: 'part' as const, part: { route: route('s'), reply: { message: [{ type: 'Plain' as const, text }], stream, isFinal }, queryId: 'q', key: text } });
  const plan = planBatch([p('a', true, false), p('ab', true, false), p('whole', false, true), p('abc', true, false), p('abcd', true, true)], {});
  assert.deepEqual(plan.send.map((s) => s.part.key), ['whole', 'abcd']);
  assert.equal(plan.coalesced, 3);
  assert.deepEqual(plan.send.map((s) => s.chunkOrdinal), [2, 4]);
});

test('a reply whose session turn cannot be ended at once (Redis failing over) is ended when it can', async () => {
  const rec = recorder();
  const calls: string[] = [];
  let failuresLeft = 2;
  const d = new Deliverer({
    redis, prefix, adapters: [rec.adapter],
    onReplyEnded: async (_r, q) => {
      calls.push(q);
      if (failuresLeft-- > 0) throw Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' });
    },
  });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  await handle(d, { queryId: q, attempt: 1, seq: 0, route: r, terminal: true }, chunk('the answer', true));
  await settle(d);
  for (let i = 0; i < 200 && calls.length < 3; i++) await delay(25);
  assert.deepEqual(calls, [q, q, q], 'tried until it went through, then no more');
  assert.deepEqual(rec.seen.map((x) => x.text), ['the answer'], 'the reply went out once');
});

test('ending a session turn that keeps failing gives up at its bound and leaves the rest flowing', async () => {
  const rec = recorder();
  let calls = 0;
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], endRetryMs: 300, onReplyEnded: async () => { calls++; throw new Error('still down'); } });
  const r = route(`s-${randomUUID()}`);
  await handle(d, { queryId: randomUUID(), attempt: 1, seq: 0, route: r, terminal: true }, chunk('first', true));
  await settle(d);
  // Past the bound (and well past, for a loaded machine) the attempts have stopped.
  await delay(1_500);
  const afterBound = calls;
  assert.ok(afterBound >= 1 && afterBound <= 4, `tried ${afterBound} times within a 300 ms bound`);
  await delay(500);
  assert.equal(calls, afterBound, 'no attempt after the bound');
  await handle(d, { queryId: randomUUID(), attempt: 1, seq: 0, route: r, terminal: true }, chunk('second', true));
  await settle(d);
  for (let i = 0; i < 200 && rec.seen.length < 2; i++) await delay(25);
  assert.deepEqual(rec.seen.map((x) => x.text), ['first', 'second']);
});

test('events handled out of order on two replicas reach the platform in order, duplicates once', async () => {
  const rec = recorder();
  const a = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const b = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  const ref = (seq: number, terminal = false): ReplyRef => ({ queryId: q, attempt: 1, seq, route: r, ...(terminal ? { terminal } : {}) });
  // seq 1 and 2 arrive before 0: nothing may be sent until 0 is sealed.
  await handle(b, ref(2), chunk('Hello wor'));
  await handle(a, ref(1), chunk('Hel'));
  await settle(a, b);
  assert.equal(rec.seen.length, 0, 'held back behind the missing seq 0');
  await handle(a, ref(0), null); // an event that shows nothing (e.g. a tool result)
  await settle(a, b);
  await handle(b, ref(1), chunk('Hel')); // a redelivery of an event already shown
  await handle(a, ref(3), chunk('Hello world', true));
  await handle(b, ref(4, true), null);
  await settle(a, b);
  const texts = rec.seen.map((s) => s.text);
  assert.equal(texts.at(-1), 'Hello world');
  assert.equal(rec.seen.filter((s) => s.isFinal).length, 1, 'exactly one final');
  assert.ok(!texts.includes('Hel') || texts.indexOf('Hel') < texts.indexOf('Hello wor'), 'never a stale snapshot after a newer one');
  assert.equal(new Set(texts).size, texts.length, 'no part twice');
});

test('a slow platform gets the newest snapshot: parts that piled up are coalesced', async () => {
  const rec = recorder(100);
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  let text = '';
  for (let i = 0; i < 30; i++) {
    text += 'x';
    await handle(d, { queryId: q, attempt: 1, seq: i, route: r }, chunk(text, false));
    await delay(10);
  }
  await handle(d, { queryId: q, attempt: 1, seq: 30, route: r }, chunk(text, true));
  await settle(d);
  assert.ok(rec.seen.length < 15, `sent ${rec.seen.length} of 31`);
  assert.ok(d.stats.coalesced > 15);
  assert.deepEqual(rec.seen.at(-1), { text, isFinal: true, stream: true, ordinal: 31 });
  const lengths = rec.seen.map((s) => s.text.length);
  assert.deepEqual(lengths, [...lengths].sort((x, y) => x - y), 'snapshots only grow');
});

test('a run that fails mid-stream ends with the failure notice as the one final part; a stream left open is closed', async () => {
  const rec = recorder();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const q1 = randomUUID();
  await handle(d, { queryId: q1, attempt: 1, seq: 0, route: r }, chunk('partial'));
  await settle(d);
  await handle(d, { queryId: q1, attempt: 1, seq: 1, route: r, terminal: true }, { message: [{ type: 'Plain', text: 'Request failed.' }], isFinal: true, stream: false });
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal, s.stream]), [['partial', false, true], ['Request failed.', true, true]]);
  const q2 = randomUUID();
  rec.seen.length = 0;
  await handle(d, { queryId: q2, attempt: 1, seq: 0, route: r }, chunk('tool round text'));
  await handle(d, { queryId: q2, attempt: 1, seq: 1, route: r, terminal: true }, null);
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal]), [['tool round text', false], ['tool round text', true]]);
});

test('events of a superseded attempt are ignored once a newer attempt started', async () => {
  const rec = recorder();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  await handle(d, { queryId: q, attempt: 2, seq: 0, route: r }, chunk('B', true));
  await handle(d, { queryId: q, attempt: 1, seq: 0, route: r }, chunk('A-late', true));
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => s.text), ['B']);
});

function numbered() {
  const seen: { q: string; text: string; isFinal: boolean; sequence: number; timestamp: number }[] = [];
  const adapter: PlatformAdapter = {
    name: 'http-bot',
    async deliver(r, reply: OutboundReply, ctx) {
      seen.push({ q: ctx.queryId, text: (reply.message[0] as { text: string })?.text ?? '', isFinal: reply.isFinal, sequence: ctx.sequence, timestamp: ctx.timestamp.getTime() });
      return { delivered: true };
    },
  };
  return { seen, adapter };
}

test('with the session leases, storing the last event ends the turn: no second call, the next message may run at once', async () => {
  const rec = recorder();
  const ended: string[] = [];
  const leases = new SessionLeases(redis, prefix);
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], sessions: leases, onReplyEnded: async (r, q) => { ended.push(q); await leases.finish(r, q); } });
  const r = route(`s-${randomUUID()}`);
  const [q, next] = [randomUUID(), randomUUID()];
  await leases.register(r, q, 1);
  assert.equal(await leases.acquire(r, q, 1), 'acquired');
  await handle(d, { queryId: q, attempt: 1, seq: 0, route: r }, chunk('so', false));
  assert.equal(await leases.holder(r), q, 'a streamed part ends nothing');
  await handle(d, { queryId: q, attempt: 1, seq: 1, route: r, terminal: true }, chunk('so done', true));
  assert.equal(await leases.holder(r), null, 'the turn ended as the last event was stored');
  await settle(d);
  assert.deepEqual(rec.seen.map((x) => [x.text, x.isFinal]), [['so', false], ['so done', true]]);
  assert.deepEqual(ended, [], 'the turn ended once, with the store');
  await leases.register(r, next, 2);
  assert.equal(await leases.acquire(r, next, 2), 'acquired');
});

test('a reply that ended takes nothing more: a newer attempt of a finished run sends no second final', async () => {
  const rec = numbered();
  const ended: string[] = [];
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], onReplyEnded: async (_r, q) => void ended.push(q) });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  await handle(d, { queryId: q, attempt: 1, seq: 0, route: r }, chunk('answer', true));
  await handle(d, { queryId: q, attempt: 1, seq: 1, route: r, terminal: true }, null);
  await settle(d);
  assert.deepEqual(ended, [q]);
  // The runner died between its last event and its ack: the run is redelivered as attempt 2.
  assert.equal(await d.admits(r, q, 2), false, 'the ended reply admits no newer attempt');
  await handle(d, { queryId: q, attempt: 2, seq: 0, route: r }, chunk('answer again', true));
  await handle(d, { queryId: q, attempt: 2, seq: 1, route: r, terminal: true }, null);
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal]), [['answer', true]]);
  assert.deepEqual(ended, [q], 'the reply ended once');
});

test('a later reply of the session waits for the earlier one to end; callback numbers rise in send order', async () => {
  const rec = numbered();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const first = randomUUID();
  const second = randomUUID();
  await handle(d, { queryId: first, attempt: 1, seq: 0, route: r }, chunk('first, part'));
  await settle(d);
  // The second reply is complete before the first one ends: it must not overtake it.
  await handle(d, { queryId: second, attempt: 1, seq: 0, route: r }, chunk('second', true));
  await handle(d, { queryId: second, attempt: 1, seq: 1, route: r, terminal: true }, null);
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => s.text), ['first, part']);
  await handle(d, { queryId: first, attempt: 1, seq: 1, route: r }, chunk('first, whole', true));
  await handle(d, { queryId: first, attempt: 1, seq: 2, route: r, terminal: true }, null);
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => [s.q, s.text, s.sequence]), [
    [first, 'first, part', 1], [first, 'first, whole', 2], [second, 'second', 1],
  ]);
  assert.equal(d.stats.interleaved, 0, 'replies one after the other number by the session\'s count alone');
});

test('an event lost for good (a gap) holds the reply back only for the gap bound', async () => {
  const rec = numbered();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], gapMs: 200, leaseMs: 300, sweepMs: 100 });
  d.start();
  try {
    const r = route(`s-${randomUUID()}`);
    const q = randomUUID();
    // seq 0 never arrives (its publisher died, or Redis lost it).
    await handle(d, { queryId: q, attempt: 1, seq: 1, route: r }, chunk('later text', true));
    await handle(d, { queryId: q, attempt: 1, seq: 2, route: r, terminal: true }, null);
    for (let i = 0; i < 200 && rec.seen.length === 0; i++) await delay(50);
    assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal]), [['later text', true]]);
    assert.ok(d.stats.skipped >= 1);
  } finally {
    await d.stop(1_000);
  }
});

test('a reply whose run vanished holds the session back only for the stall bound', async () => {
  const rec = numbered();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], stallMs: 300, leaseMs: 300, sweepMs: 100 });
  d.start();
  try {
    const r = route(`s-${randomUUID()}`);
    const gone = randomUUID();
    const next = randomUUID();
    await handle(d, { queryId: gone, attempt: 1, seq: 0, route: r }, chunk('half an answer'));
    await handle(d, { queryId: next, attempt: 1, seq: 0, route: r }, chunk('next answer', true));
    await handle(d, { queryId: next, attempt: 1, seq: 1, route: r, terminal: true }, null);
    for (let i = 0; i < 200 && !rec.seen.some((s) => s.q === next); i++) await delay(50);
    assert.deepEqual(rec.seen.map((s) => s.text), ['half an answer', 'next answer']);
  } finally {
    await d.stop(1_000);
  }
});

test('an event is reported delivered only once its parts went out; parts Redis lost before that are stored again', async () => {
  const rec = numbered();
  // This replica stores but never sends (no session slots), like one whose sender is elsewhere.
  const storing = new Deliverer({ redis, prefix, adapters: [rec.adapter], maxConcurrentSessions: 0 });
  const sending = new Deliverer({ redis, prefix, adapters: [rec.adapter], leaseMs: 300, sweepMs: 100 });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  const ref: ReplyRef = { queryId: q, attempt: 1, seq: 0, route: r, terminal: true };
  await handle(storing, ref, chunk('kept in memory until sent', true));
  // Redis loses its data before any replica sent the part.
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  let delivered = false;
  const waiting = storing.delivered(ref).then(() => (delivered = true));
  await delay(400);
  assert.equal(delivered, false, 'not delivered while the part is not out');
  sending.start();
  try {
    await waiting;
    assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal]), [['kept in memory until sent', true]]);
  } finally {
    await sending.stop(1_000);
    await storing.stop(1_000);
  }
});

test('parts Redis lost are stored again even when a later event of the reply recreated its state first', async () => {
  const rec = numbered();
  const storing = new Deliverer({ redis, prefix, adapters: [rec.adapter], maxConcurrentSessions: 0 });
  const sending = new Deliverer({ redis, prefix, adapters: [rec.adapter], leaseMs: 300, sweepMs: 100, gapMs: 1_000 });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  const answer: ReplyRef = { queryId: q, attempt: 1, seq: 0, route: r };
  const done: ReplyRef = { queryId: q, attempt: 1, seq: 1, route: r, terminal: true };
  await handle(storing, answer, { message: [{ type: 'Plain', text: 'the whole answer' }], isFinal: true, stream: false });
  await handle(storing, done, null);
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  // The reply's last event is stored again first, so the reply has state again, without its answer.
  const doneDelivered = storing.delivered(done);
  const replyKey = sending.queue.keys.reply(r, q);
  for (let i = 0; i < 200 && !(await redis.hexists(replyKey, 'e:1')); i++) await delay(25);
  const answerDelivered = storing.delivered(answer);
  sending.start();
  try {
    await Promise.all([answerDelivered, doneDelivered]);
    for (let i = 0; i < 200 && rec.seen.length === 0; i++) await delay(25);
    assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal]), [['the whole answer', true]]);
  } finally {
    await sending.stop(1_000);
    await storing.stop(1_000);
  }
});

test("the web chat's session and a platform session of the same id and bot order and number their replies apart", async () => {
  const http = numbered();
  const web = numbered();
  const d = new Deliverer({ redis, prefix, adapters: [http.adapter, { ...web.adapter, name: 'webchat' }], stallMs: 600_000 });
  try {
    const sessionId = `s-${randomUUID()}`;
    const platform = route(sessionId);
    const browser: ReplyRoute = { ...platform, adapter: 'webchat' };
    // The web chat's reply is open and gets no further event; the platform's reply comes after it.
    await handle(d, { queryId: randomUUID(), attempt: 1, seq: 0, route: browser }, chunk('half an answer'));
    const q = randomUUID();
    await handle(d, { queryId: q, attempt: 1, seq: 0, route: platform }, chunk('whole answer', true));
    await handle(d, { queryId: q, attempt: 1, seq: 1, route: platform, terminal: true }, null);
    for (let i = 0; i < 200 && http.seen.length === 0; i++) await delay(25);
    assert.deepEqual(http.seen.map((s) => [s.text, s.isFinal, s.sequence]), [['whole answer', true, 1]]);
    assert.deepEqual(web.seen.map((s) => [s.text, s.sequence]), [['half an answer', 1]]);
  } finally {
    await d.stop(1_000);
  }
});

test('once the final part went out, a newer attempt only ends the reply: no part of it is shown, no second final', async () => {
  const rec = numbered();
  const ended: string[] = [];
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], onReplyEnded: async (_r, q) => void ended.push(q) });
  try {
    const r = route(`s-${randomUUID()}`);
    const q = randomUUID();
    await handle(d, { queryId: q, attempt: 1, seq: 0, route: r }, chunk('an'));
    await handle(d, { queryId: q, attempt: 1, seq: 1, route: r }, chunk('an answer', true));
    await settle(d);
    assert.deepEqual(ended, [], 'the run has not ended yet');
    // The runner died after its final chunk, before its last event: attempt 2 runs the model again.
    await handle(d, { queryId: q, attempt: 2, seq: 0, route: r }, chunk('an'));
    await handle(d, { queryId: q, attempt: 2, seq: 1, route: r }, chunk('an answer', true));
    await handle(d, { queryId: q, attempt: 2, seq: 2, route: r, terminal: true }, null);
    for (let i = 0; i < 200 && ended.length === 0; i++) await delay(25);
    await settle(d);
    assert.deepEqual(rec.seen.map((s) => [s.text, s.isFinal, s.sequence]), [['an', false, 1], ['an answer', true, 2]]);
    assert.deepEqual(ended, [q], 'the reply ended once, at the newer attempt\'s last event');
  } finally {
    await d.stop(1_000);
  }
});

test('an event sent by another replica is acknowledged by the one that handled it, also when Redis loses its data right after the send', async () => {
  const sessionId = `s-${randomUUID()}`;
  let wiped = false;
  const seen: { text: string; isFinal: boolean }[] = [];
  const adapter: PlatformAdapter = {
    name: 'http-bot',
    async deliver(_r, reply: OutboundReply) {
      seen.push({ text: (reply.message[0] as { text: string }).text, isFinal: reply.isFinal });
      if (!wiped) {
        // Redis loses its data while the part is on its way out.
        wiped = true;
        const keys = await redis.keys(`${prefix}:*`);
        if (keys.length) await redis.del(...keys);
      }
      return { delivered: true };
    },
  };
  // This replica handles the event but does not send (no session slots); the other one sends.
  const handling = new Deliverer({ redis, prefix, adapters: [adapter], maxConcurrentSessions: 0 });
  const sending = new Deliverer({ redis, prefix, adapters: [adapter], leaseMs: 300, sweepMs: 100, gapMs: 500, announceSent: (events) => handling.sentElsewhere(events) });
  const ref: ReplyRef = { queryId: randomUUID(), attempt: 1, seq: 0, route: route(sessionId), terminal: true };
  await handle(handling, ref, { message: [{ type: 'Plain', text: 'the answer' }], isFinal: true, stream: false });
  sending.start();
  try {
    await handling.delivered(ref);
    // Storing the parts again would have brought the reply's state back (and sent them a second time).
    assert.equal(await redis.exists(sending.queue.keys.reply(ref.route, ref.queryId)), 0, 'the handled event was not stored again');
    await settle(sending);
    assert.deepEqual(seen, [{ text: 'the answer', isFinal: true }]);
  } finally {
    await sending.stop(1_000);
    await handling.stop(1_000);
  }
});

test('a part for an adapter no platform here has fails for good, with the reason, and the reply still ends', async () => {
  const rec = recorder();
  const failures: [string, string][] = [];
  const ended: string[] = [];
  const d = new Deliverer({
    redis, prefix, adapters: [rec.adapter],
    onPermanentFailure: async (queryId, reason) => void failures.push([queryId, reason]),
    onReplyEnded: async (_r, queryId) => void ended.push(queryId),
  });
  const r: ReplyRoute = { ...route(`s-${randomUUID()}`), adapter: 'carrier-pigeon' };
  const q = randomUUID();
  await handle(d, { queryId: q, attempt: 1, seq: 0, route: r, terminal: true }, { message: [{ type: 'Plain', text: 'coo' }], isFinal: true, stream: false });
  await settle(d);
  assert.deepEqual(failures, [[q, 'reply not delivered: no outbound adapter for carrier-pigeon']]);
  assert.deepEqual(ended, [q]);
  assert.equal(rec.seen.length, 0);
});

test('a reply a failover rolled back to before its last events holds the session\'s next reply back only for the gap, and its turn is ended again', async () => {
  // Async replication lost the master's last writes: the first reply's last event (its final part,
  // already sent and acknowledged) and its end are gone, so Redis shows it open, waiting for an event
  // that never comes again. The next reply's events were stored after the failover.
  const rec = numbered();
  const ended: [string, string][] = [];
  const gapMs = 1_500;
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], gapMs, leaseMs: 500, sweepMs: 100, onReplyEnded: async (r, q) => void ended.push([q, r.launcherId]) });
  // Past the gap nothing new is stored: the takeover sweep comes back for the session.
  d.start();
  try {
    const sessionId = `s-${randomUUID()}`;
    const r = route(sessionId);
    const session = { botId: r.botId, adapter: r.adapter, sessionId };
    const first = randomUUID();
    const keys = redisKeys(prefix);
    const lastEventAt = Date.now();
    await redis.hset(keys.reply(session, first), { attempt: 1, next: 3, seen: lastEventAt, chunks: 3, open: 1, last: JSON.stringify([{ type: 'Plain', text: 'w1 w2 w3' }]) });
    await redis.zadd(keys.replySessionReplies(session), lastEventAt - 2_000, first);
    await redis.hset(keys.replySessionSequence(session), { seq: 3, final: 0 });
    const next = randomUUID();
    await handle(d, { queryId: next, attempt: 1, seq: 0, route: r }, chunk('the next answer', true));
    await handle(d, { queryId: next, attempt: 1, seq: 1, route: r, terminal: true }, null);
    await delay(gapMs / 3);
    await settle(d);
    assert.equal(rec.seen.length, 0, 'within the gap the first reply may still be waiting for a slow event');
    for (let i = 0; i < 400 && !ended.some(([q]) => q === next); i++) await delay(25);
    await settle(d);
    assert.ok(Date.now() - lastEventAt >= gapMs, 'passed over only after the gap');
    assert.deepEqual(rec.seen.map((s) => [s.q, s.text, s.isFinal, s.sequence]), [[next, 'the next answer', true, 4]], 'the next reply went out, numbered after what was shown');
    assert.deepEqual(ended, [[first, sessionId], [next, sessionId]], 'the first reply\'s session turn was ended again (once), then the next one\'s');
    assert.equal(d.stats.skipped, 1, 'counted as given up');
    // Still open for an event that may come late; a later take reports it no more.
    await handle(d, { queryId: randomUUID(), attempt: 1, seq: 0, route: r, terminal: true }, { message: [{ type: 'Plain', text: 'third' }], isFinal: true, stream: false });
    for (let i = 0; i < 200 && ended.length < 3; i++) await delay(25);
    assert.equal(ended.filter(([q]) => q === first).length, 1);
    assert.equal(await redis.zscore(keys.replySessionReplies(session), first) !== null, true, 'the first reply stays until its stall bound');
  } finally {
    await d.stop(1_000);
  }
});

test('after a failover rolled a streaming reply back, the events it lost are given up after the gap and the numbers go on above the ones they may have used', async () => {
  // Redis shows the reply after its first event (one part, callback 1); events 1 and 2 went out as
  // callbacks 2 and 3 on the old master and were acknowledged, so they never come again. Event 3 was
  // not sent yet: its dispatcher stores it again after the failover.
  const rec = numbered();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], gapMs: 300, leaseMs: 300, sweepMs: 100 });
  d.start();
  try {
    const r = route(`s-${randomUUID()}`);
    const session = { botId: r.botId, adapter: r.adapter, sessionId: r.sessionId };
    const q = randomUUID();
    const keys = redisKeys(prefix);
    await redis.hset(keys.reply(session, q), { attempt: 1, next: 1, seen: Date.now(), chunks: 1, open: 1, last: JSON.stringify([{ type: 'Plain', text: 'w1' }]) });
    await redis.zadd(keys.replySessionReplies(session), Date.now(), q);
    await redis.hset(keys.replySessionSequence(session), { seq: 1, final: 0 });
    await handle(d, { queryId: q, attempt: 1, seq: 3, route: r, terminal: true }, chunk('w1 w2 w3 w4', true));
    for (let i = 0; i < 200 && rec.seen.length === 0; i++) await delay(25);
    assert.equal(rec.seen.length, 1);
    const [final] = rec.seen;
    assert.equal(final.isFinal, true);
    assert.ok(final.sequence > 3, `callback ${final.sequence} is above the numbers the lost events used (2 and 3)`);
  } finally {
    await d.stop(1_000);
  }
});

test("one replica handling a session's events at once sends each part once, in order, while the platform is slow", async () => {
  const rec = recorder(15);
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  const whole = (text: string, isFinal: boolean): OutboundReply => ({ message: [{ type: 'Plain', text }], isFinal, stream: false });
  // Each store finds the session either free (it stores and takes in one call) or being sent here.
  await Promise.all([0, 1, 2, 3, 4].map((seq) => handle(d, { queryId: q, attempt: 1, seq, route: r, ...(seq === 4 ? { terminal: true } : {}) }, whole(`part ${seq}`, seq === 4))));
  await settle(d);
  assert.deepEqual(rec.seen.map((s) => s.text), ['part 0', 'part 1', 'part 2', 'part 3', 'part 4']);
});

test('once a newer attempt of a query was stored here, its older attempt is refused without asking Redis', async () => {
  const rec = recorder();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter] });
  const r = route(`s-${randomUUID()}`);
  const q = randomUUID();
  await handle(d, { queryId: q, attempt: 2, seq: 0, route: r }, chunk('B'));
  await settle(d);
  // Redis forgets the reply (as after a data loss): what it would answer no longer refuses attempt 1.
  await redis.del(redisKeys(prefix).reply(r, q));
  assert.equal(await d.admits(r, q, 1), false);
  assert.equal(await d.admits(r, q, 2), true);
  assert.equal(await d.admits(r, q, 3), true, 'a newer attempt is asked about');
});

test('two replies of a session interleaved after Redis lost its turn never repeat a callback number within a reply', async () => {
  // Redis lost everything while the earlier reply streamed, so the session's next message ran beside
  // it: the later reply streamed first (callbacks 1 to 3), then the earlier reply's last events came
  // back, passed the later one after the gap and ended (a final restarts the session's numbering).
  // The later reply's final must not be callback 1 again: an integrator deduplicating on
  // (session_id, reply_to, sequence) would drop it, and the user would never see the reply end.
  const rec = numbered();
  const d = new Deliverer({ redis, prefix, adapters: [rec.adapter], gapMs: 300, leaseMs: 300, sweepMs: 100 });
  d.start();
  try {
    const r = route(`s-${randomUUID()}`);
    const later = randomUUID();
    const earlier = randomUUID();
    for (const seq of [0, 1, 2]) await handle(d, { queryId: later, attempt: 1, seq, route: r }, chunk(`later ${seq}`));
    for (let i = 0; i < 200 && rec.seen.length < 3; i++) await delay(25);
    assert.deepEqual(rec.seen.map((s) => [s.q, s.sequence]), [[later, 1], [later, 2], [later, 3]]);
    // Events 0 and 1 of the earlier reply went out before the loss; its last two come back now.
    await handle(d, { queryId: earlier, attempt: 1, seq: 2, route: r }, chunk('earlier 2'));
    await handle(d, { queryId: earlier, attempt: 1, seq: 3, route: r, terminal: true }, chunk('earlier 3', true));
    for (let i = 0; i < 400 && !rec.seen.some((s) => s.q === earlier && s.isFinal); i++) await delay(25);
    assert.ok(rec.seen.some((s) => s.q === earlier && s.isFinal), 'the earlier reply ended');
    await handle(d, { queryId: later, attempt: 1, seq: 3, route: r, terminal: true }, chunk('later 3', true));
    for (let i = 0; i < 400 && !rec.seen.some((s) => s.q === later && s.isFinal); i++) await delay(25);
    const laterNumbers = rec.seen.filter((s) => s.q === later).map((s) => s.sequence);
    assert.equal(laterNumbers.length, 4, `the later reply's parts: ${JSON.stringify(rec.seen)}`);
    for (let i = 1; i < laterNumbers.length; i++) assert.ok(laterNumbers[i]! > laterNumbers[i - 1]!, `the later reply's callback numbers rise: ${laterNumbers.join(', ')}`);
    const earlierNumbers = rec.seen.filter((s) => s.q === earlier).map((s) => s.sequence);
    assert.equal(new Set(earlierNumbers).size, earlierNumbers.length, `the earlier reply repeats no number: ${earlierNumbers.join(', ')}`);
    assert.equal(d.stats.interleaved, 1, 'counted once: the later reply\'s last batch');
  } finally {
    await d.stop(1_000);
  }
});
