import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { ConnectionSupervisor, type ConnectionTarget, type LiveConnection } from './supervisor.js';
import { ConnectionLease } from './lease.js';
import { useTestRedis } from '@conveyor/test-support';

const testRedis = useTestRedis();
const { prefix } = testRedis;
let redis: Redis;
before(() => {
  redis = testRedis.redis();
});

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Connections as plain objects: which replica holds which bot, and a way to drop one from the "platform" side. */
class Connections {
  readonly open = new Map<string, { owner: string; lease: ConnectionLease; end: (reason: string) => void }>();
  opened = 0;
  failNext = 0;

  connector(owner: string) {
    return async (target: ConnectionTarget, lease: ConnectionLease): Promise<LiveConnection> => {
      if (this.failNext > 0) {
        this.failNext--;
        throw new Error('platform refused');
      }
      const key = target.botId;
      assert.equal(this.open.has(key), false, `a second live connection for ${key}`);
      this.opened++;
      let end!: (reason: string) => void;
      const ended = new Promise<string>((resolve) => (end = resolve));
      this.open.set(key, { owner, lease, end: (reason) => { this.open.delete(key); end(reason); } });
      return { ended, close: async () => void this.open.delete(key) };
    };
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function supervisor(owner: string, conns: Connections, targets: () => ConnectionTarget[], ttl = 600) {
  return new ConnectionSupervisor({
    redis, prefix, ownerId: owner, leaseTtlMs: ttl, tickMs: 50, targets: async () => targets(), connect: conns.connector(owner),
    backoff: () => 50, logger: quiet,
  });
}

test('two replicas: each bot is connected by exactly one, and a stopping replica hands its bots over at once', async () => {
  const conns = new Connections();
  const bots = [{ botId: 'b1', adapter: 'onebot', config: {} }, { botId: 'b2', adapter: 'onebot', config: {} }];
  const a = supervisor('a', conns, () => bots, 60_000);
  const b = supervisor('b', conns, () => bots, 60_000);
  a.start();
  b.start();
  try {
    await until('both bots connected', () => conns.open.size === 2);
    assert.equal(a.owned().length + b.owned().length, 2);
    const fromA = a.owned();
    await a.stop();
    // The TTL is a minute: only the release lets `b` take over this quickly.
    await until('b holds both bots', () => conns.open.size === 2 && [...conns.open.values()].every((c) => c.owner === 'b'));
    for (const botId of fromA) assert.ok(b.owned().includes(botId));
  } finally {
    await a.stop();
    await b.stop();
  }
  assert.equal(conns.open.size, 0, 'stop closes every connection');
});

test('a bot whose owner stopped renewing (killed) is taken over once the TTL passes; the dead owner then fails the fencing check', async () => {
  const conns = new Connections();
  const bots = [{ botId: 'k1', adapter: 'onebot', config: {} }];
  // The killed replica: it took the lease and then never renewed or released it.
  const dead = new ConnectionLease({ redis, prefix, botId: 'k1', ownerId: 'ka', ttlMs: 400 });
  assert.equal(await dead.acquire(), true);
  const b = supervisor('kb', conns, () => bots, 400);
  b.start();
  try {
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(conns.open.size, 0, 'nobody connects while the lease is alive');
    await until('b took over after expiry', () => conns.open.get('k1')?.owner === 'kb');
    await assert.rejects(dead.check(), { code: 'CONNECTION_LEASE_LOST' });
  } finally {
    await b.stop();
  }
});

test('a dropped or refused connection is retried while the bot is owned; a disabled bot is disconnected and released', async () => {
  const conns = new Connections();
  let bots = [{ botId: 'r1', adapter: 'onebot', config: { n: 1 } }];
  conns.failNext = 2;
  const a = supervisor('ra', conns, () => bots, 60_000);
  a.start();
  try {
    await until('connected after two refusals', () => conns.open.has('r1'));
    conns.open.get('r1')!.end('peer closed');
    await until('reconnected', () => conns.opened === 2 && conns.open.has('r1'));
    bots = [{ botId: 'r1', adapter: 'onebot', config: { n: 2 } }];
    await until('reconnected with the new settings', () => conns.opened === 3 && conns.open.has('r1'));
    bots = [];
    await until('disconnected', () => !conns.open.has('r1') && a.owned().length === 0);
    assert.equal(await redis.exists(`${prefix}:gw:{r1}:lease`), 0, 'the lease was released');
  } finally {
    await a.stop();
  }
});

test('changed settings: the new connection opens only once the old one has closed', async () => {
  const opened: string[] = [];
  let live = 0;
  let mostLive = 0;
  let finishClosing: (() => void) | undefined;
  let config = { version: 1 };
  let ticks = 0;
  let closeAtOnce = false;
  const s = new ConnectionSupervisor({
    redis, prefix, ownerId: 'settings', leaseTtlMs: 60_000, tickMs: 50, logger: quiet, backoff: () => 50,
    targets: async () => {
      ticks++;
      return [{ botId: 'settings-bot', adapter: 'onebot', config }];
    },
    connect: async (target) => {
      opened.push(JSON.stringify(target.config));
      live++;
      mostLive = Math.max(mostLive, live);
      return {
        ended: new Promise<string>(() => undefined),
        // A close the test finishes when it chooses (the platform is slow to answer it); at once after the test.
        close: () => new Promise<void>((resolve) => {
          finishClosing = () => {
            live--;
            resolve();
          };
          if (closeAtOnce) finishClosing();
        }),
      };
    },
  });
  try {
    s.start();
    await until('the first connection is open', () => s.owned().includes('settings-bot') && opened.length === 1);
    config = { version: 2 };
    const changedAt = ticks;
    await until('three rounds after the change', () => ticks >= changedAt + 3);
    assert.ok(finishClosing, 'the old connection was asked to close');
    assert.deepEqual(opened, ['{"version":1}'], 'nothing new opens while the old connection is closing');
    finishClosing();
    await until('the new connection opens', () => opened.length === 2);
    assert.equal(opened[1], '{"version":2}');
    assert.equal(mostLive, 1, 'never two connections at once');
  } finally {
    closeAtOnce = true;
    finishClosing?.();
    await s.stop();
  }
});
