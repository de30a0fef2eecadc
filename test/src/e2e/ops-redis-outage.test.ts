import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpBotError } from '@conveyor/http-bot';
import { startOwnedRedis, type OwnedDependency } from '../harness/dependencies.js';
import { ALL_SERVICES } from '../harness/services.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';

/**
 * Redis down under a running system: the ingress refuses new messages at once with LangBot's 503
 * (instead of accepting them slowly), every service says once that Redis went away and once that it
 * came back, and messages flow again on their own after Redis returns.
 */
describe('a Redis outage at the ingress', () => {
  let redis: OwnedDependency;
  let sys: TestSystem;

  before(async () => {
    redis = await startOwnedRedis();
    sys = await startTestSystem({ redisUrl: redis.url });
    sys.llm.setDefault((body) => ({ text: `Echo: ${JSON.stringify(body.messages?.at(-1)?.content)}` }));
  });

  after(async () => {
    await sys?.stop();
    await redis?.stop();
  });

  const ingressReady = () => fetch(`${sys.services.get('ingress').url}/health/ready`).then((r) => r.status, () => 0);

  async function postAndWaitForReply(sessionId: string): Promise<void> {
    const res = await sys.post({ session_id: sessionId, message: [{ type: 'Plain', text: `hello from ${sessionId}` }] });
    const body = await res.text();
    assert.equal(res.status, 202, body);
    const { data } = JSON.parse(body) as { data: { accepted_message_id: string } };
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === data.accepted_message_id && c.json?.is_final), 30_000);
  }

  /** The service's pino lines that report the Redis connection state, in order. */
  function redisStateLines(instance: string): { state: string; msg: string }[] {
    return sys.services.get(instance).logs.flatMap((line) => {
      try {
        const entry = JSON.parse(line) as { dependency?: string; state?: string; msg: string };
        return entry.dependency === 'redis' ? [{ state: entry.state!, msg: entry.msg }] : [];
      } catch {
        return [];
      }
    });
  }

  test('503 at once while Redis is down, one log line per state change, answers again once it is back', async () => {
    await postAndWaitForReply('before-outage');

    await redis.kill();
    await waitUntil('the ingress reports not ready', async () => (await ingressReady()) === 503, 15_000);
    for (const name of ALL_SERVICES) {
      await waitUntil(`${name} logs that Redis is down`, () => redisStateLines(name).some((l) => l.state === 'down'), 15_000);
    }

    // Generous bound: the point is an answer in seconds instead of a request stuck on Redis retries.
    const res = await sys.post({ session_id: 'during-outage', message: [{ type: 'Plain', text: 'are you there?' }] }, { signal: AbortSignal.timeout(5_000) });
    assert.equal(res.status, 503);
    assert.deepEqual(await res.json(), HttpBotError.overloaded().body);

    await redis.start();
    await waitUntil('the ingress is ready again', async () => (await ingressReady()) === 200, 30_000);
    for (const name of ALL_SERVICES) {
      await waitUntil(`${name} logs that Redis is back`, () => redisStateLines(name).some((l) => l.state === 'up'), 30_000);
    }
    await postAndWaitForReply('after-outage');

    const logs = sys.services.allLogs();
    assert.doesNotMatch(logs, /Unhandled error event/);
    for (const name of ALL_SERVICES) {
      // One line when it went, one when it came back: not one per reconnection attempt.
      assert.deepEqual(redisStateLines(name).map((l) => l.state), ['down', 'up'], `${name}:\n${sys.services.get(name).logs.slice(-30).join('\n')}`);
    }
  });
});
