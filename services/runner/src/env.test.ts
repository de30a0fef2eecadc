import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EnvError, loadEnv } from '@conveyor/service-kit';
import { RunnerEnv } from './env.js';

test('image reads are bounded by default and refuse private networks unless switched on', () => {
  const env = loadEnv(RunnerEnv, {});
  assert.deepEqual(
    [env.ATTACHMENT_FETCH_TIMEOUT_MS, env.ATTACHMENT_MAX_BYTES, env.ATTACHMENT_MAX_REDIRECTS, env.ATTACHMENT_MAX_IMAGES, env.ATTACHMENT_ALLOW_PRIVATE_NETWORK],
    [10_000, 5 * 1_048_576, 3, 4, false],
  );
  assert.equal(loadEnv(RunnerEnv, { ATTACHMENT_ALLOW_PRIVATE_NETWORK: '' }).ATTACHMENT_ALLOW_PRIVATE_NETWORK, false);
  assert.equal(loadEnv(RunnerEnv, { ATTACHMENT_ALLOW_PRIVATE_NETWORK: 'true' }).ATTACHMENT_ALLOW_PRIVATE_NETWORK, true);
  assert.throws(() => loadEnv(RunnerEnv, { ATTACHMENT_MAX_BYTES: '0' }), EnvError);
  assert.throws(() => loadEnv(RunnerEnv, { ATTACHMENT_ALLOW_PRIVATE_NETWORK: 'maybe' }), EnvError);
});

test('message content goes on GenAI spans only when the conventions opt-in says true', () => {
  assert.equal(loadEnv(RunnerEnv, {}).OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, false);
  assert.equal(loadEnv(RunnerEnv, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: '' }).OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, false);
  assert.equal(loadEnv(RunnerEnv, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'false' }).OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, false);
  assert.equal(loadEnv(RunnerEnv, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }).OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, true);
  assert.throws(() => loadEnv(RunnerEnv, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'sometimes' }), EnvError);
});
