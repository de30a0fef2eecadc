import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiKeyRefError, resolveApiKey } from './api-key-ref.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiKeyRefError) return err.code;
    throw err;
  }
  return undefined;
};

// What a runner's environment holds besides keys; none of it may be read through a reference.
const runnerEnv = {
  DATABASE_URL: 'postgresql://conveyor:db-password@db/conveyor',
  NATS_PASSWORD: 'nats-password',
  CONVEYOR_SECRET_KEY: 'c2VjcmV0LWtleQ==',
  REDIS_URL: 'redis://:redis-password@redis:6379',
  CONVEYOR_KEY_OPENAI: 'sk-openai',
  LLM_API_KEY: 'sk-llm',
  COZE_TOKEN: 'pat-coze',
};

test('env: references reach CONVEYOR_KEY_* and the listed names only, never the runner\'s other variables', () => {
  for (const name of ['DATABASE_URL', 'NATS_PASSWORD', 'CONVEYOR_SECRET_KEY', 'REDIS_URL', 'COZE_TOKEN', 'CONVEYOR_KEY_']) {
    assert.equal(codeOf(() => resolveApiKey(`env:${name}`, runnerEnv)), 'env_not_allowed', name);
  }
  assert.equal(resolveApiKey('env:CONVEYOR_KEY_OPENAI', runnerEnv), 'sk-openai');
  // The example config's variable is listed by default.
  assert.equal(resolveApiKey('env:LLM_API_KEY', runnerEnv), 'sk-llm');
  // A deployment lists its own names, which replaces the default list.
  const listed = { ...runnerEnv, CONVEYOR_KEY_ENV_NAMES: 'COZE_TOKEN, OTHER' };
  assert.equal(resolveApiKey('env:COZE_TOKEN', listed), 'pat-coze');
  assert.equal(codeOf(() => resolveApiKey('env:LLM_API_KEY', listed)), 'env_not_allowed');
  assert.equal(codeOf(() => resolveApiKey('env:LLM_API_KEY', { ...runnerEnv, CONVEYOR_KEY_ENV_NAMES: '' })), 'env_not_allowed');
  // Listing a name does not make an unset one resolve.
  assert.equal(codeOf(() => resolveApiKey('env:OTHER', listed)), 'env_unset');
  assert.equal(codeOf(() => resolveApiKey('env:CONVEYOR_KEY_MISSING', runnerEnv)), 'env_unset');
  assert.equal(codeOf(() => resolveApiKey('file:/etc/passwd', runnerEnv)), 'unsupported_ref');
  assert.equal(resolveApiKey('', runnerEnv), undefined);
});
