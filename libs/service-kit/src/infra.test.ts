import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { DEFAULT_POOL_SIZE } from '@conveyor/persistence';
import { EnvError, loadServiceEnv } from './env.js';
import { databasePoolSize } from './infra.js';

const NoRoleEnv = z.object({});

test('a process opens its role\'s number of Postgres connections unless DATABASE_POOL_SIZE says otherwise', () => {
  assert.equal(databasePoolSize(loadServiceEnv(NoRoleEnv, {}), 5), 5, 'the role default');
  assert.equal(databasePoolSize(loadServiceEnv(NoRoleEnv, {})), DEFAULT_POOL_SIZE, 'a role without one gets 20');
  assert.equal(DEFAULT_POOL_SIZE, 20);
  assert.equal(databasePoolSize(loadServiceEnv(NoRoleEnv, { DATABASE_POOL_SIZE: '12' }), 5), 12, 'the setting wins');
});

test('DATABASE_POOL_SIZE is a whole number from 1 to 1000', () => {
  for (const bad of ['0', '-3', '2.5', 'twenty', '5000']) {
    assert.throws(() => loadServiceEnv(NoRoleEnv, { DATABASE_POOL_SIZE: bad }), (err: unknown) => err instanceof EnvError && /DATABASE_POOL_SIZE/.test(err.message), bad);
  }
});
