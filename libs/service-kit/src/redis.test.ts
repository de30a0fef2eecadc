import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { EnvError, loadServiceEnv } from './env.js';
import { SentinelRedis, createRedis, duplicateClient, redisOptions, redisTarget } from './redis.js';

const NoRole = z.object({});

test('without REDIS_SENTINELS, REDIS_URL alone says where Redis is', () => {
  const env = loadServiceEnv(NoRole, { REDIS_URL: 'redis://cache:6379/2' });
  assert.equal(env.REDIS_SENTINELS, undefined);
  const options = redisOptions(env, 'svc');
  assert.equal(options.sentinels, undefined);
  assert.equal(options.connectionName, 'svc');
  assert.equal(redisTarget(env), 'redis://cache:6379/2');
});

test('REDIS_SENTINELS lists host:port entries; REDIS_URL still gives the master its credentials, database and TLS', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-redis-env-'));
  try {
    await writeFile(path.join(dir, 'pw'), 'from-file\n');
    const env = loadServiceEnv(NoRole, {
      REDIS_URL: 'rediss://app:s%3Acret@ignored:6379/3',
      REDIS_SENTINELS: 's1:26379, 10.0.0.2:26380,[::1]:26381',
      REDIS_SENTINEL_MASTER: 'conveyor',
      REDIS_SENTINEL_PASSWORD: 'inline',
      REDIS_SENTINEL_PASSWORD_FILE: path.join(dir, 'pw'),
    });
    assert.deepEqual(env.REDIS_SENTINELS, [{ host: 's1', port: 26379 }, { host: '10.0.0.2', port: 26380 }, { host: '::1', port: 26381 }]);
    const o = redisOptions(env, 'svc');
    assert.deepEqual(o.sentinels, env.REDIS_SENTINELS);
    assert.equal(o.name, 'conveyor');
    assert.equal(o.username, 'app');
    assert.equal(o.password, 's:cret');
    assert.equal(o.db, 3);
    assert.deepEqual(o.tls, {});
    assert.equal(o.enableTLSForSentinelMode, true);
    assert.equal(o.sentinelPassword, 'from-file', 'the file wins over the inline value');
    assert.equal(o.failoverDetector, true);
    const target = redisTarget(env);
    assert.match(target, /s1:26379,10\.0\.0\.2:26380,::1:26381 \(master conveyor\)/);
    assert.doesNotMatch(target, /cret|inline|from-file/, 'no password in what error messages show');
    // The pub/sub subscribers are duplicates of the shared client: they follow the same Sentinels and
    // come back the same way after ioredis gives a connection up.
    const client = createRedis(env, 'svc');
    assert.ok(client instanceof SentinelRedis);
    const subscriber = duplicateClient(client);
    assert.ok(subscriber instanceof SentinelRedis);
    assert.deepEqual(subscriber.options.sentinels, env.REDIS_SENTINELS);
    assert.equal(subscriber.options.name, 'conveyor');
    client.disconnect();
    subscriber.disconnect();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a malformed Sentinel entry, or Sentinels without a master name, stop the service with the setting named', () => {
  assert.throws(
    () => loadServiceEnv(NoRole, { REDIS_SENTINELS: 's1:26379,s2', REDIS_SENTINEL_MASTER: 'm' }),
    (err: unknown) => err instanceof EnvError && /REDIS_SENTINELS: "s2" is not host:port/.test(err.message),
  );
  assert.throws(
    () => loadServiceEnv(NoRole, { REDIS_SENTINELS: 's1:99999', REDIS_SENTINEL_MASTER: 'm' }),
    (err: unknown) => err instanceof EnvError && /REDIS_SENTINELS: "s1:99999" is not host:port/.test(err.message),
  );
  assert.throws(
    () => loadServiceEnv(NoRole, { REDIS_SENTINELS: 's1:26379' }),
    (err: unknown) => err instanceof EnvError && /REDIS_SENTINEL_MASTER: REDIS_SENTINELS is set/.test(err.message),
  );
  assert.throws(
    () => loadServiceEnv(NoRole, { REDIS_SENTINEL_MASTER: 'm' }),
    (err: unknown) => err instanceof EnvError && /REDIS_SENTINELS: REDIS_SENTINEL_MASTER is set/.test(err.message),
  );
  assert.throws(
    () => loadServiceEnv(NoRole, { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_MASTER: 'bad name' }),
    (err: unknown) => err instanceof EnvError && /REDIS_SENTINEL_MASTER: a Sentinel master name/.test(err.message),
  );
});
