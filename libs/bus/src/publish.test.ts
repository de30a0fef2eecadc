import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { HEADERS } from '@conveyor/contracts';
import { PayloadTooLargeError, PayloadValidationError } from './errors.js';
import { ensureStreams } from './provision.js';
import { BusPublisher } from './publish.js';
import { streamMessages, testBus } from '@conveyor/test-support';

const Ping = z.object({ v: z.literal(1), n: z.number().int(), text: z.string() });

test('a repeated msgId is stored once and the second PubAck says duplicate', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const stream = bus.topo.streams.queries;
  await ensureStreams(bus.jsm, [stream]);
  const pub = new BusPublisher(bus.js, { streams: Object.values(bus.topo.streams) });
  const subject = bus.topo.subjects.query('bot-1');

  const a = await pub.publish(subject, Ping, { v: 1, n: 1, text: 'hi' }, { msgId: 'm-1', queryId: 'q-1', schemaName: 'Ping/1' });
  const b = await pub.publish(subject, Ping, { v: 1, n: 1, text: 'hi' }, { msgId: 'm-1', queryId: 'q-1', schemaName: 'Ping/1' });
  assert.equal(a.duplicate, false);
  assert.equal(b.duplicate, true);
  assert.equal(b.seq, a.seq);
  assert.equal(a.stream, stream.name);
  assert.equal(await streamMessages(bus.jsm, stream.name), 1);

  const stored = await bus.jsm.streams.getMessage(stream.name, { seq: a.seq });
  assert.ok(stored);
  assert.deepEqual(stored.json(), { v: 1, n: 1, text: 'hi' });
  assert.equal(stored.header.get(HEADERS.msgId), 'm-1');
  assert.equal(stored.header.get(HEADERS.queryId), 'q-1');
  assert.equal(stored.header.get(HEADERS.schema), 'Ping/1');
});

test('a payload its schema rejects throws and sends nothing; so does an oversized one', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const stream = bus.topo.streams.queries;
  await ensureStreams(bus.jsm, [stream]);
  const pub = new BusPublisher(bus.js);
  const subject = bus.topo.subjects.query('bot-1');

  await assert.rejects(
    pub.publish(subject, Ping, { v: 1, n: 1.5, text: 'x' } as never, { msgId: 'bad-1' }),
    (err: unknown) => err instanceof PayloadValidationError && /n: /.test(err.message),
  );
  await assert.rejects(
    pub.publish(subject, Ping, { v: 1, n: 1, text: 'x'.repeat(1_100_000) }, { msgId: 'big-1' }),
    PayloadTooLargeError,
  );
  await assert.rejects(pub.publish(subject, Ping, { v: 1, n: 1, text: 'x' }, { msgId: '' }), TypeError);
  assert.equal(await streamMessages(bus.jsm, stream.name), 0);
});

test('validate: false sends the payload as built (the consumer validates it); its size is still bounded', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const stream = bus.topo.streams.queries;
  await ensureStreams(bus.jsm, [stream]);
  const pub = new BusPublisher(bus.js);
  const subject = bus.topo.subjects.query('bot-1');
  const built = { v: 1 as const, n: 2, text: 'as built', extra: 'kept' };
  const ack = await pub.publish(subject, Ping, built, { msgId: 'built-1', validate: false });
  const stored = await bus.jsm.streams.getMessage(stream.name, { seq: ack.seq });
  // Not parsed here: the key the schema does not know is still in the body (a parse strips it).
  assert.deepEqual(stored?.json(), built);
  await assert.rejects(pub.publish(subject, Ping, { v: 1, n: 1, text: 'x'.repeat(1_100_000) }, { msgId: 'big-2', validate: false }), PayloadTooLargeError);
  assert.equal(await streamMessages(bus.jsm, stream.name), 1);
});

test('the published body is the parsed payload (unknown keys stripped)', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const stream = bus.topo.streams.runs;
  await ensureStreams(bus.jsm, [stream]);
  const pub = new BusPublisher(bus.js);
  const ack = await pub.publish(bus.topo.subjects.run('b'), Ping, { v: 1, n: 2, text: 'y', extra: true } as never, { msgId: 'x' });
  const stored = await bus.jsm.streams.getMessage(stream.name, { seq: ack.seq });
  assert.deepEqual(stored?.json(), { v: 1, n: 2, text: 'y' });
  assert.equal(stored?.header.has(HEADERS.queryId), false);
});

test('retryWhen unavailable: a publish with no stream to answer it waits for one; a full stream is refused at once', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const stream = bus.topo.streams.queries;
  const pub = new BusPublisher(bus.js);
  const subject = bus.topo.subjects.query('bot-1');

  // Nobody answers the subject yet, as while a clustered stream elects its leader.
  let settled = false;
  const waiting = pub.publish(subject, Ping, { v: 1, n: 1, text: 'early' }, { msgId: 'early-1', retryForMs: 30_000, retryWhen: 'unavailable' });
  void waiting.finally(() => { settled = true; }).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(settled, false, 'still retrying while no stream answers');
  await ensureStreams(bus.jsm, [stream]);
  const ack = await waiting;
  assert.equal(ack.stream, stream.name);
  assert.equal(await streamMessages(bus.jsm, stream.name), 1);

  // A full stream (discard new) is not an outage: it stays full until consumers catch up.
  await ensureStreams(bus.jsm, [{ ...stream, maxBytes: 1_024 }]);
  let full: unknown;
  for (let i = 0; i < 50 && !full; i++) {
    full = await pub.publish(subject, Ping, { v: 1, n: i, text: 'x'.repeat(200) }, { msgId: `fill-${i}`, retryForMs: 30_000, retryWhen: 'unavailable' }).then(() => undefined, (err: unknown) => err);
  }
  assert.ok(full, 'the stream filled up');
  const started = Date.now();
  await assert.rejects(pub.publish(subject, Ping, { v: 1, n: 99, text: 'x'.repeat(200) }, { msgId: 'over', retryForMs: 30_000, retryWhen: 'unavailable' }));
  assert.ok(Date.now() - started < 10_000, 'refused without waiting out the retry budget');
});
