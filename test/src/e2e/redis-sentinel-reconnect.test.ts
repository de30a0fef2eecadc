import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOwnedRedisSentinel, type OwnedRedisSentinel } from '../harness/redis-sentinel.js';
import { ask } from '../harness/redis-ask.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';

/** The ids of the connections a Sentinel lists as subscribed to a channel (the failover detectors). */
async function subscribedClients(port: number): Promise<string[]> {
  const list = String(await ask(port, 'CLIENT', 'LIST'));
  return list.split('\n').filter((line) => /\bsub=[1-9]/.test(line)).map((line) => /\bid=(\d+)/.exec(line)?.[1] ?? '');
}

/** The services' connections to a Redis server (they name theirs after their role). */
async function serviceConnections(port: number): Promise<number> {
  const list = String(await ask(port, 'CLIENT', 'LIST'));
  return list.split('\n').filter((line) => /\bname=(ingress|orchestrator|runner|dispatcher)\b/.test(line)).length;
}

/**
 * A Sentinel failover that lands while the services are between connections. Every service has lost
 * its master connection and is asking the first Sentinel where the master is; that Sentinel hangs
 * (SIGSTOP), and meanwhile another Sentinel fails the master over. ioredis's failover detector then
 * closes the connector in the middle of the connect attempt, and ioredis gives the client up for good
 * (status `end`). The services' clients connect again by themselves: a message sent afterwards is
 * accepted and answered.
 */
describe('Redis Sentinel: a failover announced while the services reconnect', () => {
  let set: OwnedRedisSentinel;
  let sys: TestSystem;

  before(async () => {
    set = await startOwnedRedisSentinel();
    try {
      await set.waitHealthy();
      sys = await startTestSystem({ redisUrl: set.url, serviceEnv: { ...set.env, LOG_LEVEL: 'warn' } });
    } catch (err) {
      await set.stop();
      throw err;
    }
    sys.llm.setDefault((body) => ({ text: `re: ${String(body.messages?.at(-1)?.content ?? '')}` }));
  });

  after(async () => {
    await sys?.stop();
    await set?.stop();
  });

  test('the clients ioredis gives up come back, and a message sent afterwards is answered', async () => {
    const [first, second, third] = set.sentinelNodes;
    assert.ok(first && second && third, 'three Sentinels');
    const oldMaster = await set.masterPort();
    // Every service connection has its failover detector subscribed on every Sentinel.
    const detectors = await waitUntil('every service connection watched by a failover detector', async () => {
      const connections = await serviceConnections(oldMaster);
      const onSecond = await subscribedClients(second.port);
      const onThird = await subscribedClients(third.port);
      return connections > 0 && onSecond.length >= connections && onThird.length >= connections ? { onSecond, onThird } : undefined;
    }, 60_000, 100);

    // The first Sentinel, which every client asks first, hangs; every service connection is dropped,
    // so each client is soon waiting on that Sentinel's answer.
    first.pause();
    let resumed = false;
    try {
      await ask(oldMaster, 'CLIENT', 'KILL', 'TYPE', 'normal');
      await ask(oldMaster, 'CLIENT', 'KILL', 'TYPE', 'pubsub');
      await ask(second.port, 'SENTINEL', 'FAILOVER', set.masterName);
      const promoted = await waitUntil('the second Sentinel names the promoted replica', async () => {
        const reply = await ask(second.port, 'SENTINEL', 'get-master-addr-by-name', set.masterName).catch(() => undefined);
        const port = Array.isArray(reply) ? Number(reply[1]) : undefined;
        return port !== undefined && port !== oldMaster ? port : undefined;
      }, 60_000, 100);
      // The detectors saw the switch: each closed its connector and its own Sentinel connections.
      await waitUntil('the failover detectors fired', async () => {
        const [onSecond, onThird] = [await subscribedClients(second.port), await subscribedClients(third.port)];
        return !detectors.onSecond.some((id) => onSecond.includes(id)) && !detectors.onThird.some((id) => onThird.includes(id));
      }, 60_000, 100);
      first.resume();
      resumed = true;

      await waitUntil('the services connected to the promoted master', async () => (await serviceConnections(promoted)) > 0, 60_000, 200);
      // The race happened (ioredis gave the clients up), and the services said so.
      assert.match(sys.services.allLogs(), /Redis client given up by ioredis during a Sentinel failover; connecting again/);
      const res = await waitUntil('the ingress accepts a message again', async () => {
        const r = await sys.post({ session_id: 'after-failover', sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text: 'still there?' }] });
        return r.status === 202 ? r : undefined;
      }, 60_000, 250);
      const accepted = (await res.json()) as { data: { accepted_message_id: string } };
      const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === accepted.data.accepted_message_id && c.json?.is_final === true), 60_000);
      const final = all.find((c) => c.json?.reply_to === accepted.data.accepted_message_id && c.json?.is_final === true);
      assert.deepEqual(final?.json.message, [{ type: 'Plain', text: 're: still there?' }]);
    } finally {
      if (!resumed) first.resume();
    }
  });
});
