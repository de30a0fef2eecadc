import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EnvError, loadEnv } from '@conveyor/service-kit';
import { commandPrefixes, OrchestratorEnv } from './env.js';

test('commands use LangBot\'s prefixes unless configured, and none when switched off', () => {
  assert.deepEqual(commandPrefixes(loadEnv(OrchestratorEnv, {})), ['!', '！']);
  assert.deepEqual(commandPrefixes(loadEnv(OrchestratorEnv, { COMMAND_PREFIX: '/, #' })), ['/', '#']);
  assert.deepEqual(commandPrefixes(loadEnv(OrchestratorEnv, { COMMAND_ENABLE: 'false' })), []);
  assert.deepEqual(commandPrefixes(loadEnv(OrchestratorEnv, { COMMAND_ENABLE: 'true', COMMAND_PREFIX: '/' })), ['/']);
});

test('a prefix list with no prefix, or a switch that is not a boolean, stops the service with the reason', () => {
  assert.throws(() => loadEnv(OrchestratorEnv, { COMMAND_PREFIX: ' , ' }), (err: unknown) => err instanceof EnvError && /COMMAND_PREFIX needs at least one prefix/.test(err.message));
  assert.throws(() => loadEnv(OrchestratorEnv, { COMMAND_ENABLE: 'sometimes' }), (err: unknown) => err instanceof EnvError && /COMMAND_ENABLE/.test(err.message));
});
