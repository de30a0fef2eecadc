import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EnvError, loadEnv } from '@conveyor/service-kit';
import { OrchestratorEnv } from './env.js';

test('commands use LangBot\'s prefixes unless configured (the defaults when no instance setting is stored)', () => {
  assert.deepEqual(loadEnv(OrchestratorEnv, {}).COMMAND_PREFIX, ['!', '！']);
  assert.deepEqual(loadEnv(OrchestratorEnv, { COMMAND_PREFIX: '/, #' }).COMMAND_PREFIX, ['/', '#']);
  assert.equal(loadEnv(OrchestratorEnv, { COMMAND_ENABLE: 'false' }).COMMAND_ENABLE, false);
  assert.equal(loadEnv(OrchestratorEnv, {}).COMMAND_ENABLE, true);
});

test('a prefix list with no prefix, or a switch that is not a boolean, stops the service with the reason', () => {
  assert.throws(() => loadEnv(OrchestratorEnv, { COMMAND_PREFIX: ' , ' }), (err: unknown) => err instanceof EnvError && /COMMAND_PREFIX needs at least one prefix/.test(err.message));
  assert.throws(() => loadEnv(OrchestratorEnv, { COMMAND_ENABLE: 'sometimes' }), (err: unknown) => err instanceof EnvError && /COMMAND_ENABLE/.test(err.message));
});
