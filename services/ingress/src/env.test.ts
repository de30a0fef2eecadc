import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EnvError, loadEnv } from '@conveyor/service-kit';
import { IngressEnv, webChatAccess } from './env.js';

const token = 'a-web-chat-token-of-24ch';

test('the web chat is off unless switched on; an empty value counts as unset', () => {
  assert.deepEqual(webChatAccess(loadEnv(IngressEnv, {})), { enabled: false });
  assert.deepEqual(webChatAccess(loadEnv(IngressEnv, { WEBCHAT_ENABLED: '', WEBCHAT_TOKEN: '' })), { enabled: false });
  assert.deepEqual(webChatAccess(loadEnv(IngressEnv, { WEBCHAT_ENABLED: 'false', WEBCHAT_TOKEN: token })), { enabled: false });
  assert.deepEqual(webChatAccess(loadEnv(IngressEnv, { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: token })), { enabled: true, token });
});

test('switched on, the web chat needs a token long enough to resist guessing', () => {
  for (const env of [{ WEBCHAT_ENABLED: 'true' }, { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: '' }]) {
    assert.throws(() => loadEnv(IngressEnv, env), (err: unknown) => err instanceof EnvError && /WEBCHAT_TOKEN is required when WEBCHAT_ENABLED is true/.test(err.message));
  }
  assert.throws(() => loadEnv(IngressEnv, { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: 'short' }), (err: unknown) => err instanceof EnvError && /WEBCHAT_TOKEN needs at least 16 characters/.test(err.message));
  assert.throws(() => loadEnv(IngressEnv, { WEBCHAT_ENABLED: 'maybe', WEBCHAT_TOKEN: token }), EnvError);
});
