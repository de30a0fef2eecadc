import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { HEADERS } from '@conveyor/contracts';
import { PayloadTooLargeError, PayloadValidationError } from './errors.js';
import { ensureStreams } from './provision.js';
import { BusPublisher } from './publish.js';
import { streamMessages, testBus } from './test-support.js';

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
