import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { EnvError, loadServiceEnv } from './env.js';

const RoleEnv = z
  .object({ WORKERS: z.coerce.number().int().min(1).default(4), LOW: z.coerce.number().default(1), HIGH: z.coerce.number().default(2) })
  .refine((env) => env.LOW < env.HIGH, { message: 'LOW must be below HIGH', path: ['LOW'] });

test('a service gets every service\'s settings and its role\'s, each parsed by its own schema', () => {
  const env = loadServiceEnv(RoleEnv, { WORKERS: '8', REDIS_URL: 'redis://cache:6379' });
  assert.equal(env.WORKERS, 8);
  assert.equal(env.REDIS_URL, 'redis://cache:6379');
  assert.equal(env.NATS_URL, 'nats://127.0.0.1:4222', 'defaults of the base schema');
});

test('problems of both schemas are named together, the role schema\'s refinements included', () => {
  assert.throws(
    () => loadServiceEnv(RoleEnv, { PORT: 'eighty', LOW: '5', HIGH: '3' }),
    (err: unknown) => err instanceof EnvError && /PORT/.test(err.message) && /LOW must be below HIGH/.test(err.message),
  );
});

test('NATS_URL takes several servers comma-separated and names the entry that is not one', () => {
  const env = loadServiceEnv(RoleEnv, { NATS_URL: 'nats://n1:4222, nats://n2:4222,n3:4222' });
  assert.equal(env.NATS_URL, 'nats://n1:4222, nats://n2:4222,n3:4222');
  assert.equal(env.NATS_STREAM_REPLICAS, 1, 'one copy of each stream unless set');
  assert.throws(
    () => loadServiceEnv(RoleEnv, { NATS_URL: 'nats://n1:4222,,nats://n3:4222' }),
    (err: unknown) => err instanceof EnvError && /NATS_URL: server 2 of 3 is empty/.test(err.message),
  );
  assert.throws(
    () => loadServiceEnv(RoleEnv, { NATS_URL: 'nats://n1:4222,http://user:secret@n2:4222' }),
    (err: unknown) => err instanceof EnvError && /server 2 of 2 .*scheme http/.test(err.message) && !/secret/.test(err.message),
  );
  assert.throws(() => loadServiceEnv(RoleEnv, { NATS_URL: 'nats://bad host:4222' }), (err: unknown) => err instanceof EnvError && /NATS_URL: the server .* is not a URL/.test(err.message));
});

test('NATS_STREAM_REPLICAS is a whole number from 1 to 5', () => {
  assert.equal(loadServiceEnv(RoleEnv, { NATS_STREAM_REPLICAS: '3' }).NATS_STREAM_REPLICAS, 3);
  for (const bad of ['0', '2.5', '7', 'three']) {
    assert.throws(() => loadServiceEnv(RoleEnv, { NATS_STREAM_REPLICAS: bad }), (err: unknown) => err instanceof EnvError && /NATS_STREAM_REPLICAS/.test(err.message), bad);
  }
});
