import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { redisKeys } from '@conveyor/contracts';
import { SessionLeases } from '@conveyor/message-state';
import { repoRoot } from '../harness/services.js';
import { REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { callbacksFor, finalReply, send, text } from './pipeline-support.js';

const replyText = (json: { message?: { text?: string }[] }) => (json.message ?? []).map((p) => p.text ?? '').join('');

/**
 * The orchestrator's admission (session lease, pipeline slot, the chat's rate window) is behind it, the
 * run not yet published: a plugin called from the stages holds the first call open, and the only
 * orchestrator is SIGKILLed there. Its replacement gets the message again (JetStream's ack wait), finds
 * the message still the session's holder, runs the stages again and hands the run off once: one answer,
 * the rate window counting the message once, the session's next message answered after it, the session
 * free at the end.
 */
describe('an orchestrator SIGKILLed between admission and the run\'s publish', () => {
  let sys: TestSystem;
  let redis: Redis;
  let plugin: ChildProcess | undefined;
  const pluginCalls: string[] = [];

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { ORCHESTRATOR_ACK_WAIT_MS: '3000' } });
    redis = new Redis(REDIS_URL);
    plugin = spawn(process.execPath, [path.join(repoRoot, 'test/dist/fakes/plugin-misbehaving-main.js')], {
      // The orchestrator waits for the held call as long as the test needs (the registration's timeout).
      env: { ...process.env, CONVEYOR_SUBJECT_PREFIX: sys.prefix, PLUGIN_NAME: 'test/hold', PLUGIN_MODE: 'hold-first', PLUGIN_TIMEOUT_MS: '30000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    plugin.stdout!.setEncoding('utf8').on('data', (chunk: string) => pluginCalls.push(...chunk.split('\n').filter((l) => l.includes('"call"'))));
    await waitUntil('the orchestrator knows the plugin', () => sys.services.get('orchestrator').logs.some((l) => l.includes('plugin registered') && l.includes('test/hold')), 30_000);
  });

  after(async () => {
    plugin?.kill('SIGKILL');
    redis?.disconnect();
    await sys?.stop();
  });

  test('the redelivered copy runs once: one answer, counted once in the rate window, the next message after it', async () => {
    const session = uniqueName('admitted');
    const route = { botId: sys.botId, adapter: 'http-bot' as const, launcherType: 'person' as const, launcherId: session };
    const leases = new SessionLeases(redis, sys.prefix);
    const first = await send(sys, text(session, 'first question'));
    await waitUntil('the stages calling the plugin', () => pluginCalls.length === 1, 60_000);
    const holder = await leases.holder(route);
    assert.ok(holder, 'the message was admitted: it holds its session');
    assert.equal(sys.llm.requests.filter((r) => JSON.stringify(r.body).includes('first question')).length, 0, 'no run was published yet');

    await sys.services.kill('orchestrator', 'SIGKILL');
    await sys.services.start('orchestrator');

    const final = await finalReply(sys, first, 90_000);
    assert.equal(replyText(final.json), 'Echo: first question');
    assert.ok(pluginCalls.length >= 2, 'the replacement ran the stages again');
    assert.equal(sys.llm.requests.filter((r) => JSON.stringify(r.body).includes('first question')).length, 1, 'the model was asked once');
    const windows = (await redis.keys(`${redisKeys(sys.prefix).rateLimitWindow(route, `*${session}`)}:q:*`)).sort();
    assert.ok(windows.length >= 1, 'the rate window counted the message');
    for (const key of windows) assert.deepEqual(await redis.smembers(key), [holder], `${key} counts the message once, under its own id`);

    const second = await send(sys, text(session, 'second question'));
    const secondFinal = await finalReply(sys, second, 60_000);
    assert.equal(replyText(secondFinal.json), 'Echo: second question');
    assert.ok(secondFinal.receivedAt > final.receivedAt);
    assert.equal(callbacksFor(sys, first).filter((c) => c.json?.is_final === true).length, 1, 'one answer to the first message');
    await waitUntil('the session freed after the second reply', async () => (await leases.holder(route)) === null, 30_000);
  });
});
