import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PluginEventPayload, PluginRegistration } from '@conveyor/contracts';
import { PluginHost } from './plugin-host.js';
import { installTestTracing, memoryLogger, testBus, waitFor } from '@conveyor/test-support';

const spans = installTestTracing();

const encode = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
const registration = (name: string, extra: Partial<PluginRegistration> = {}): PluginRegistration => ({
  v: 1, name, instanceId: `${name}-1`, events: ['PersonNormalMessageReceived'], tools: [], commands: [], retrievers: [], priority: 0, timeoutMs: 1_000, ttlMs: 5_000, ...extra,
});
const event: PluginEventPayload = { event_name: 'PersonNormalMessageReceived', launcher_type: 'person', launcher_id: 'u', sender_id: 'u', text_message: 'hi', message_chain: [{ type: 'Plain', text: 'hi' }] };

test('the registry: call order by priority then name, the pipeline binding, expiry after the last heartbeat, invalid heartbeats refused', async () => {
  const bus = await testBus('plugin-registry');
  let now = 1_000_000;
  const logger = memoryLogger();
  const host = new PluginHost(bus.nc, bus.topo.prefix, { now: () => now, logger });
  try {
    assert.ok(host.register(encode(registration('a/low', { priority: -1 }))));
    assert.ok(host.register(encode(registration('b/high', { priority: 5 }))));
    assert.ok(host.register(encode(registration('a/high', { priority: 5 }))));
    assert.ok(host.register(encode(registration('c/other', { events: ['PromptPreProcessing'] }))));
    assert.deepEqual(host.forEvent('PersonNormalMessageReceived', 'all').map((p) => p.name), ['a/high', 'b/high', 'a/low']);
    assert.deepEqual(host.forEvent('PersonNormalMessageReceived', ['a/low', 'c/other']).map((p) => p.name), ['a/low']);
    assert.deepEqual(host.forEvent('PersonNormalMessageReceived', []), []);
    const listed = host.registrations();
    assert.deepEqual(listed.map((r) => r.registration.name), ['a/high', 'a/low', 'b/high', 'c/other'], 'every live registration, by name');
    assert.deepEqual([listed[0].lastHeartbeatAt, listed[0].expiresAt], [now, now + listed[0].registration.ttlMs]);
    now += 4_999;
    assert.ok(host.register(encode(registration('a/low', { priority: -1 }))), 'a heartbeat renews');
    now += 2;
    assert.deepEqual(host.forEvent('PersonNormalMessageReceived', 'all').map((p) => p.name), ['a/low']);
    assert.equal(host.register(encode({ ...registration('bad/timeout'), timeoutMs: 60_000 })), false);
    assert.equal(host.register(encode({ ...registration('no-author') })), false);
    assert.equal(host.register(new TextEncoder().encode('{not json')), false);
    const rejections = logger.lines.filter((l) => l.msg === 'plugin heartbeat rejected');
    assert.equal(rejections.length, 1, 'one warning per minute, with the count');
    now += 60_000;
    assert.equal(host.register(new TextEncoder().encode('[]')), false);
    assert.deepEqual(logger.lines.filter((l) => l.msg === 'plugin heartbeat rejected').map((l) => (l.obj as { rejected: number }).rejected), [1, 3]);
  } finally {
    host.stop();
    await bus.cleanup();
  }
});

test('emit: plugins are called in order over NATS, each sees the event as the one before left it, prevent_postorder stops the rest; an absent plugin is skipped at once', async () => {
  const bus = await testBus('plugin-emit');
  const host = await new PluginHost(bus.nc, bus.topo.prefix).start();
  const subjects = bus.topo.subjects.plugins;
  const seen: string[] = [];
  const answer = (name: string, reply: (req: { event: PluginEventPayload }) => unknown) =>
    bus.nc.subscribe(subjects.call(name), { callback: (_e, msg) => {
      const req = JSON.parse(new TextDecoder().decode(msg.data)) as { event: PluginEventPayload };
      seen.push(`${name}:${msg.headers?.get('traceparent') ? 'traced' : 'untraced'}`);
      msg.respond(encode(reply(req)));
    } });
  const subs = [
    answer('p/first', () => ({ v: 1, default_prompt: [{ role: 'system', content: 'first' }] })),
    answer('p/second', (req) => ({ v: 1, prompt: req.event.event_name === 'PromptPreProcessing' ? [...req.event.default_prompt, { role: 'user', content: 'seen' }] : [], prevent_postorder: true })),
    answer('p/third', () => ({ v: 1, prevent_default: true })),
  ];
  await bus.nc.flush();
  try {
    host.register(encode(registration('p/first', { events: ['PromptPreProcessing'], priority: 3 })));
    host.register(encode(registration('p/second', { events: ['PromptPreProcessing'], priority: 2 })));
    host.register(encode(registration('p/third', { events: ['PromptPreProcessing'], priority: 1 })));
    host.register(encode(registration('p/absent', { events: ['PromptPreProcessing'], priority: 4 })));
    const started = Date.now();
    const outcome = await host.emit({ queryId: 'q1', botId: 'b', pipelineId: 'p', event: { event_name: 'PromptPreProcessing', session_name: 'person_u', default_prompt: [], prompt: [] } }, 'all');
    assert.ok(Date.now() - started < 900, 'an absent plugin (no responders) costs no timeout');
    assert.deepEqual(outcome.answered, ['p/first', 'p/second']);
    assert.equal(outcome.preventDefault, false, 'the third plugin was not called');
    assert.deepEqual(outcome.defaultPrompt, [{ role: 'system', content: 'first' }]);
    assert.deepEqual(outcome.prompt, [{ role: 'system', content: 'first' }, { role: 'user', content: 'seen' }]);
    assert.deepEqual(seen, ['p/first:traced', 'p/second:traced']);
    const calls = spans.getFinishedSpans().filter((s) => s.name.startsWith('plugin p/'));
    assert.deepEqual(calls.map((s) => [s.name, s.attributes['conveyor.plugin.result']]), [
      ['plugin p/absent PromptPreProcessing', 'no_responders'],
      ['plugin p/first PromptPreProcessing', 'ok'],
      ['plugin p/second PromptPreProcessing', 'ok'],
    ]);
  } finally {
    for (const s of subs) s.unsubscribe();
    host.stop();
    await bus.cleanup();
  }
});

test('a host starting asks for heartbeats: a plugin answering the discovery is registered at once', async () => {
  const bus = await testBus('plugin-discover');
  const subjects = bus.topo.subjects.plugins;
  const sub = bus.nc.subscribe(subjects.discover, { callback: () => bus.nc.publish(subjects.heartbeat, encode(registration('d/plugin'))) });
  await bus.nc.flush();
  const host = await new PluginHost(bus.nc, bus.topo.prefix).start();
  try {
    await waitFor(() => host.forEvent('PersonNormalMessageReceived', 'all').length === 1, 5_000, 'the discovered plugin');
  } finally {
    sub.unsubscribe();
    host.stop();
    await bus.cleanup();
  }
});

test('a tool whose argument schema is not valid JSON Schema refuses the registration, naming the plugin and tool; a valid one is accepted', async () => {
  const bus = await testBus('plugin-schema');
  const logger = memoryLogger();
  const host = new PluginHost(bus.nc, bus.topo.prefix, { logger });
  try {
    const tool = (parameters: Record<string, unknown>) => ({ name: 'lookup', description: 'd', parameters });
    assert.equal(host.register(encode(registration('s/bad', { events: [], tools: [tool({ type: 'object', properties: { q: { type: 'strng' } } })] }))), false);
    assert.match(String((logger.lines.at(-1)?.obj as { reason?: string })?.reason), /plugin s\/bad, tool lookup: the argument schema is not valid JSON Schema/);
    assert.equal(host.register(encode(registration('s/array', { events: [], tools: [tool({ type: 'array' })] }))), false);
    assert.ok(host.register(encode(registration('s/good', { events: [], tools: [tool({ type: 'object', properties: { q: { type: 'string' } } })] }))));
    assert.deepEqual(host.toolsFor('all').map((t) => `${t.plugin.name}:${t.tool.name}`), ['s/good:lookup']);
  } finally {
    host.stop();
    await bus.cleanup();
  }
});
