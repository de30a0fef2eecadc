import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AckPolicy, DiscardPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { awaitStreams, ensureConsumers, ensureStreams } from './provision.js';
import { isBrokerUnavailable } from './errors.js';
import { testBus } from '@conveyor/test-support';

test('provisioning creates file streams and explicit-ack pull consumers, idempotently', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const streams = Object.values(bus.topo.streams);
  const consumers = Object.values(bus.topo.consumers);

  const first = await ensureStreams(bus.jsm, streams);
  const firstConsumers = await ensureConsumers(bus.jsm, consumers);
  const second = await ensureStreams(bus.jsm, streams);
  const secondConsumers = await ensureConsumers(bus.jsm, consumers);

  assert.deepEqual(second.map((s) => s.config), first.map((s) => s.config));
  assert.deepEqual(secondConsumers.map((c) => c.config), firstConsumers.map((c) => c.config));
  assert.deepEqual(second.map((s) => s.created), first.map((s) => s.created), 'second run must not recreate');

  const queries = await bus.jsm.streams.info(bus.topo.streams.queries.name);
  assert.equal(queries.config.storage, StorageType.File);
  assert.equal(queries.config.retention, RetentionPolicy.Workqueue);
  assert.equal(queries.config.discard, DiscardPolicy.New);
  assert.equal(queries.config.max_age, nanos(bus.topo.streams.queries.maxAgeMs));
  assert.equal(queries.config.duplicate_window, nanos(bus.topo.streams.queries.duplicateWindowMs));
  assert.equal(queries.config.max_bytes, bus.topo.streams.queries.maxBytes);
  assert.equal(queries.config.max_msg_size, bus.topo.streams.queries.maxMsgSize);
  assert.deepEqual(queries.config.subjects, bus.topo.streams.queries.subjects);

  const dlq = await bus.jsm.streams.info(bus.topo.streams.deadLetters.name);
  assert.equal(dlq.config.retention, RetentionPolicy.Limits);
  assert.equal(dlq.config.discard, DiscardPolicy.Old);

  const spec = bus.topo.consumers.runner;
  const ci = await bus.jsm.consumers.info(spec.stream, spec.durable);
  assert.equal(ci.config.durable_name, spec.durable);
  assert.equal(ci.config.ack_policy, AckPolicy.Explicit);
  assert.equal(ci.config.ack_wait, nanos(spec.ackWaitMs));
  assert.equal(ci.config.max_deliver, spec.maxDeliver);
  assert.equal(ci.config.max_ack_pending, spec.maxAckPending);
  assert.equal(ci.config.filter_subject, spec.filterSubject);
  assert.equal(ci.config.deliver_subject, undefined, 'must be a pull consumer');
});

test('provisioning updates a changed max_age and changed consumer limits in place', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const spec = bus.topo.streams.events;
  const [before] = await ensureStreams(bus.jsm, [spec]);
  await ensureConsumers(bus.jsm, [bus.topo.consumers.dispatcher]);
  await bus.js.publish(bus.topo.subjects.event('b'), '{}');

  const changed = { ...spec, maxAgeMs: spec.maxAgeMs * 2 };
  const [after] = await ensureStreams(bus.jsm, [changed]);
  assert.equal(after.config.max_age, nanos(changed.maxAgeMs));
  assert.notEqual(after.config.max_age, before.config.max_age);
  assert.equal(after.created, before.created, 'updated, not recreated');
  assert.equal(after.state.messages, 1, 'data kept');
  assert.equal((await bus.jsm.streams.info(spec.name)).config.max_age, nanos(changed.maxAgeMs));

  const consumer = { ...bus.topo.consumers.dispatcher, ackWaitMs: 5_000, maxDeliver: 7, maxAckPending: 42 };
  const [ci] = await ensureConsumers(bus.jsm, [consumer]);
  assert.equal(ci.config.ack_wait, nanos(5_000));
  assert.equal(ci.config.max_deliver, 7);
  assert.equal(ci.config.max_ack_pending, 42);
  assert.equal(ci.num_pending, 1, 'consumer kept its state');
});

test('provisioning refuses to silently change a stream the server cannot update', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const spec = bus.topo.streams.queries;
  await ensureStreams(bus.jsm, [spec]);
  await assert.rejects(ensureStreams(bus.jsm, [{ ...spec, retention: 'limits' }]), /differs from its spec in retention/);
  assert.equal((await bus.jsm.streams.info(spec.name)).config.retention, RetentionPolicy.Workqueue);
});

test('replicas above 1 on a server outside a cluster are refused with the setting named, on create and on update', async (t) => {
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const spec = bus.topo.streams.runs;
  await assert.rejects(ensureStreams(bus.jsm, [spec], { replicas: 3 }), /NATS_STREAM_REPLICAS is 3, but JetStream cannot place 3 replicas/);
  const [created] = await ensureStreams(bus.jsm, [spec]);
  assert.equal(created.config.num_replicas, 1);
  await assert.rejects(ensureStreams(bus.jsm, [spec], { replicas: 3 }), /NATS_STREAM_REPLICAS is 3/);
  assert.equal((await bus.jsm.streams.info(spec.name)).config.num_replicas, 1, 'left as it was');
  await assert.rejects(ensureStreams(bus.jsm, [spec], { replicas: 0 }), RangeError);
});

test('at start a service waits, bounded, for a JetStream that does not answer yet, saying so once', async (t) => {
  // A server without JetStream answers the API as a cluster still electing its leaders does: not at all.
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  const child = spawn(process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  let nc: NatsConnection | undefined;
  for (let i = 0; i < 100 && !nc; i++) nc = await connect({ servers: `127.0.0.1:${port}` }).catch(() => new Promise<undefined>((r) => setTimeout(() => r(undefined), 100)));
  assert.ok(nc, 'the JetStream-less server is up');
  t.after(() => nc!.close());
  const bus = await testBus();
  t.after(() => bus.cleanup());
  const warnings: string[] = [];
  const logger = { info() {}, error() {}, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
  const started = Date.now();
  await assert.rejects(awaitStreams(await jetstreamManager(nc, { timeout: 500, checkAPI: false }), [bus.topo.streams.runs], { timeoutMs: 3_000, logger }), (err: unknown) => isBrokerUnavailable(err));
  assert.ok(Date.now() - started >= 1_000, 'it tried again before giving up');
  assert.deepEqual(warnings, ['JetStream is not answering yet; waiting up to 3 s']);
  // Where JetStream answers, it provisions at once.
  const [info] = await awaitStreams(bus.jsm, [bus.topo.streams.runs], { timeoutMs: 3_000, logger });
  assert.equal(info.config.name, bus.topo.streams.runs.name);
});
