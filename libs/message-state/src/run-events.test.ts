import { test } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { BusPublisher, ensureStreams, PayloadValidationError } from '@conveyor/bus';
import { testBus } from '@conveyor/test-support';
import { RunnerEvent, type ReplyRoute } from '@conveyor/contracts';
import { RunEvents } from './run-events.js';

const route: ReplyRoute = { botId: 'bot-1', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 'u', replyTo: 'm1' };

test('an error event whose text is over its bound is refused before it leaves; streamed chunks are sent as built', async () => {
  const bus = await testBus('run-events-bounds');
  try {
    const spec = bus.topo.streams.events;
    await ensureStreams(bus.jsm, [spec]);
    const infra = { publisher: new BusPublisher(bus.js, { streams: [spec] }), topology: bus.topo };
    const run = new RunEvents(infra, { queryId: randomUUID(), route }, 1, 'runner');
    await assert.rejects(run.emit({ kind: 'error', error: 'x'.repeat(10_001), userText: null }), PayloadValidationError);
    await run.emit({ kind: 'chunk', text: 'y'.repeat(20_000), isFinal: false });
    const info = await bus.jsm.streams.info(spec.name);
    assert.equal(info.state.messages, 1, 'only the chunk was stored');
    const m = await bus.jsm.streams.getMessage(spec.name, { seq: info.state.last_seq });
    const chunk = RunnerEvent.parse(m?.json());
    assert.equal(chunk.kind, 'chunk');
    // Sent as built: the default the schema would have filled in is not in the body; the consumer's parse adds it.
    assert.equal((m?.json() as { hasToolCalls?: boolean }).hasToolCalls, undefined);
    assert.equal(chunk.kind === 'chunk' && chunk.hasToolCalls, false);
  } finally {
    await bus.cleanup();
  }
});

test('RunEvents numbers a query\'s events, gives each its dedup id, and keeps the orchestrator\'s apart from the runner\'s', async () => {
  const bus = await testBus('run-events');
  try {
    const spec = bus.topo.streams.events;
    await ensureStreams(bus.jsm, [spec]);
    const infra = { publisher: new BusPublisher(bus.js, { streams: [spec] }), topology: bus.topo };
    const queryId = randomUUID();
    const query = { queryId, route };

    const run = new RunEvents(infra, query, 2, 'runner');
    assert.deepEqual(run.next(), { attempt: 2, seq: 0 });
    await run.emit({ kind: 'chunk', text: 'he', isFinal: false });
    await run.emit({ kind: 'message', message: { role: 'assistant', content: 'hello' } });
    assert.equal(run.emitted, 2);
    assert.deepEqual(run.next(), { attempt: 2, seq: 2 });

    // A redelivered run that finished republishes its last event under the number it recorded: the
    // stream stores it once.
    const again = new RunEvents(infra, query, 2, 'runner', 1);
    await again.emit({ kind: 'message', message: { role: 'assistant', content: 'hello' } });
    assert.equal(again.emitted, 1);
    assert.deepEqual(again.next(), { attempt: 2, seq: 2 });

    // The orchestrator's events of the same query and number are other messages.
    const orchestrator = new RunEvents(infra, query, 2, 'orchestrator');
    await orchestrator.emit({ kind: 'notice', text: 'wait' });

    const info = await bus.jsm.streams.info(spec.name);
    assert.equal(info.state.messages, 3, 'the republished event was a duplicate; the orchestrator\'s was not');
    const stored = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await bus.jsm.streams.getMessage(spec.name, { seq });
      assert.ok(m, `stream message ${seq}`);
      stored.push({ id: m.header.get('Nats-Msg-Id'), event: RunnerEvent.parse(m.json()) });
    }
    assert.deepEqual(stored.map((s) => s.id), [`evt:${queryId}:2:0`, `evt:${queryId}:2:1`, `evt:${queryId}:orch:2:0`]);
    assert.deepEqual(stored.map((s) => [s.event.kind, s.event.attempt, s.event.seq]), [['chunk', 2, 0], ['message', 2, 1], ['notice', 2, 0]]);
    assert.equal(stored[0]!.event.queryId, queryId);
    assert.deepEqual(stored[0]!.event.route, route);
  } finally {
    await bus.cleanup();
  }
});
