import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createPrismaClient } from '@conveyor/persistence';
import { repoRoot } from '../harness/services.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { callbacksFor, finalReply, send, text } from './pipeline-support.js';

const replyText = (json: { message?: { text?: string }[] }) => (json.message ?? []).map((p) => p.text ?? '').join('');

interface PluginProcess {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

/** Runs a plugin as its own process against the system's NATS and prefix, and waits until the orchestrator and dispatcher know it. */
async function startPlugin(sys: TestSystem, script: string, name: string, env: NodeJS.ProcessEnv = {}): Promise<PluginProcess> {
  const child = spawn(process.execPath, [path.join(repoRoot, script)], {
    env: { ...process.env, CONVEYOR_SUBJECT_PREFIX: sys.prefix, PLUGIN_NAME: name, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (const role of ['orchestrator', 'dispatcher']) {
    await waitUntil(`${role} registered ${name}`, () => sys.services.get(role).logs.some((l) => l.includes('plugin registered') && l.includes(name)), 20_000);
  }
  return { child, lines, exited };
}

async function metricValue(sys: TestSystem, pattern: RegExp): Promise<number> {
  const body = await (await fetch(`${sys.services.get('orchestrator').url}/metrics`)).text();
  return body.split('\n').filter((l) => pattern.test(l)).reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/**
 * Plugin events through the four services and real plugin processes: the example keyword plugin
 * (SDK) answers, silences or rewrites; misbehaving plugins (raw protocol) cost at most their timeout.
 */
describe('plugins', () => {
  let sys: TestSystem;
  const plugins: PluginProcess[] = [];

  before(async () => {
    sys = await startTestSystem();
    plugins.push(await startPlugin(sys, 'examples/keyword-plugin/dist/main.js', 'conveyor/keyword-reply', { PLUGIN_TIMEOUT_MS: '5000' }));
  });
  after(async () => {
    for (const p of plugins) if (p.child.exitCode === null) p.child.kill('SIGTERM');
    await Promise.all(plugins.map((p) => p.exited));
    await sys?.stop();
  });

  test('prevent_default with a reply chain: the plugin\'s reply is the answer and no runner is called', async () => {
    const before = sys.llm.requests.length;
    const id = await send(sys, text('plugin-keyword', 'ping please'));
    const final = await finalReply(sys, id);
    assert.equal(replyText(final.json), 'pong');
    assert.equal(callbacksFor(sys, id).length, 1);
    assert.equal(sys.llm.requests.length, before, 'the model was not called');
  });

  test('prevent_default without a reply ends the message silently; user_message_alter rewrites what the runner gets', async () => {
    const before = sys.llm.requests.length;
    const silent = await send(sys, text('plugin-silent', 'shh, no answer'));
    const next = await send(sys, text('plugin-silent', 'hello'));
    // One session answers in order: the silent message ended before the next one started.
    assert.equal(replyText((await finalReply(sys, next)).json), 'Echo: [via keyword-plugin] hello');
    assert.deepEqual(callbacksFor(sys, silent), []);
    const calls = sys.llm.requests.slice(before);
    assert.equal(calls.length, 1, 'only the rewritten message reached the model');
    const lastUser = calls[0].body.messages!.filter((m) => m.role === 'user').at(-1);
    assert.equal(lastUser?.content, '[via keyword-plugin] hello');
  });

  test('a slow, a crashing and a malformed plugin each cost at most their timeout, are counted, and the reply still comes', async () => {
    const [slow, crash, malformed] = await Promise.all([
      startPlugin(sys, 'test/dist/fakes/plugin-misbehaving-main.js', 'test/slow', { PLUGIN_MODE: 'slow', PLUGIN_TIMEOUT_MS: '500', PLUGIN_PRIORITY: '300' }),
      startPlugin(sys, 'test/dist/fakes/plugin-misbehaving-main.js', 'test/crash', { PLUGIN_MODE: 'crash', PLUGIN_TIMEOUT_MS: '500', PLUGIN_PRIORITY: '200' }),
      startPlugin(sys, 'test/dist/fakes/plugin-misbehaving-main.js', 'test/malformed', { PLUGIN_MODE: 'malformed', PLUGIN_TIMEOUT_MS: '500', PLUGIN_PRIORITY: '100' }),
    ]);
    plugins.push(slow, crash, malformed);
    const started = Date.now();
    const id = await send(sys, text('plugin-faults', 'hello again'));
    // The keyword plugin (priority 0) is called after the three and still rewrites the message.
    assert.equal(replyText((await finalReply(sys, id)).json), 'Echo: [via keyword-plugin] hello again');
    const elapsed = Date.now() - started;
    // Two timeouts of 500 ms (slow, crash) and an immediate malformed answer; the slow plugin's 10 s answer is not awaited.
    assert.ok(elapsed < 8_000, `reply took ${elapsed} ms`);
    assert.equal(await crash.exited, 3, 'the crashing plugin died on its call');
    await waitUntil('the failures counted', async () => (await metricValue(sys, /^conveyor_plugin_calls_total\{.*plugin="test\/slow".*result="timeout"/)) >= 1 && (await metricValue(sys, /^conveyor_plugin_calls_total\{.*plugin="test\/crash".*result="(timeout|no_responders)"/)) >= 1 && (await metricValue(sys, /^conveyor_plugin_calls_total\{.*plugin="test\/malformed".*result="malformed"/)) >= 1, 15_000);
    const orchestratorLogs = sys.services.get('orchestrator').logs;
    assert.ok(orchestratorLogs.some((l) => l.includes('plugin call failed') && l.includes('test/slow') && l.includes('"trace_id"')), 'the timeout is logged with the trace id');
    assert.ok(orchestratorLogs.some((l) => l.includes('malformed reply') && l.includes('test/malformed')));

    // The dead plugin's registration is still live, but with nobody subscribed the call fails at once.
    const again = Date.now();
    const second = await send(sys, text('plugin-faults', 'and again'));
    assert.equal(replyText((await finalReply(sys, second)).json), 'Echo: [via keyword-plugin] and again');
    await waitUntil('no responders counted', async () => (await metricValue(sys, /^conveyor_plugin_calls_total\{.*plugin="test\/crash".*result="no_responders"/)) >= 1, 15_000);
    assert.ok(Date.now() - again < 8_000);
  });

  test('trace context crosses into the plugin: the call is a span of the message\'s trace and the plugin got its traceparent', async () => {
    const slow = plugins.find((p) => p.lines.some((l) => l.includes('"mode":"slow"')));
    assert.ok(slow, 'the slow plugin runs');
    const call = slow.lines.map((l) => JSON.parse(l) as { call?: string; traceparent?: string | null }).find((l) => l.call === 'test/slow');
    assert.match(call?.traceparent ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const [, traceId, spanId] = call!.traceparent!.split('-');
    const spans = await sys.otlp.waitFor((s) => s.some((x) => x.spanId === spanId), 20_000);
    const span = spans.find((x) => x.spanId === spanId)!;
    assert.equal(span.traceId, traceId);
    assert.equal(span.name, 'plugin test/slow PersonNormalMessageReceived');
    assert.equal(span.kindName, 'CLIENT');
    assert.equal(span.attributes['conveyor.plugin.result'], 'timeout');
    assert.ok(spans.some((x) => x.traceId === traceId && x.serviceName === 'conveyor-ingress'), 'the same trace the ingress started');
  });

  test('the other events: MessageReceived drops before any stage, PromptPreProcessing sets the preset, NormalMessageResponded replaces an answer', async () => {
    plugins.push(await startPlugin(sys, 'test/dist/fakes/plugin-events-main.js', 'test/events'));
    const before = sys.llm.requests.length;
    const dropped = await send(sys, text('plugin-events', 'drop-me now'));
    const secret = await send(sys, text('plugin-events', 'tell the secret'));
    assert.equal(replyText((await finalReply(sys, secret)).json), '[redacted by plugin]');
    assert.deepEqual(callbacksFor(sys, dropped), [], 'the dropped message got no reply');
    const calls = sys.llm.requests.slice(before);
    assert.equal(calls.length, 1, 'only the second message reached the model');
    const [first] = calls[0].body.messages!;
    assert.equal(first.role, 'system');
    assert.match(String(first.content), /^preset from the plugin\n\nCurrent date: /);
    assert.equal(calls[0].body.messages!.filter((m) => m.role === 'user').at(-1)?.content, '[via keyword-plugin] tell the secret');
  });
});

/** LangBot's extensions_preferences: a pipeline with enable_all_plugins false calls only the plugins it lists. */
describe('plugins bound per pipeline', () => {
  let sys: TestSystem;
  const plugins: PluginProcess[] = [];

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    const prisma = createPrismaClient(sys.db.url);
    try {
      await prisma.pipeline.update({ where: { id: 'default' }, data: { extensionsPreferences: { enable_all_plugins: false, plugins: ['test/events'] } } });
    } finally {
      await prisma.$disconnect();
    }
    await sys.services.startAll();
    plugins.push(
      await startPlugin(sys, 'examples/keyword-plugin/dist/main.js', 'conveyor/keyword-reply'),
      await startPlugin(sys, 'test/dist/fakes/plugin-events-main.js', 'test/events'),
    );
  });
  after(async () => {
    for (const p of plugins) if (p.child.exitCode === null) p.child.kill('SIGTERM');
    await Promise.all(plugins.map((p) => p.exited));
    await sys?.stop();
  });

  test('the listed plugin is called, the registered but unlisted one is not', async () => {
    const before = sys.llm.requests.length;
    const id = await send(sys, text('bound-1', 'ping'));
    // The keyword plugin would have answered `pong` without a model call.
    assert.equal(replyText((await finalReply(sys, id)).json), 'Echo: ping');
    const call = sys.llm.requests[before];
    assert.match(String(call.body.messages![0].content), /^preset from the plugin/, 'the bound plugin set the preset');
    assert.ok((await metricValue(sys, /^conveyor_plugin_calls_total\{.*plugin="test\/events".*result="ok"/)) >= 1);
    assert.equal(await metricValue(sys, /^conveyor_plugin_calls_total\{.*plugin="conveyor\/keyword-reply"/), 0, 'no call to the unbound plugin');
  });
});

