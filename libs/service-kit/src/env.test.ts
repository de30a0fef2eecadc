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
