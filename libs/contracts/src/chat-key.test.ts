import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatKey } from './chat-key.js';
import { redisKeys } from './redis-keys.js';

test('a platform chat keeps LangBot\'s key; a web chat of the same session id gets a key of its own', () => {
  const chat = { botId: 'b', launcherType: 'person', launcherId: 'alice' };
  assert.deepEqual(chatKey({ ...chat, adapter: 'http-bot' }), chat);
  assert.deepEqual(chatKey({ ...chat, adapter: 'telegram' }), chat);
  assert.deepEqual(chatKey({ ...chat, adapter: 'webchat' }), { ...chat, launcherType: 'webchat:person' });
});

test('no platform launcher id reaches a web chat session key', () => {
  const keys = redisKeys('p');
  const web = keys.sessionQueue({ botId: 'b', adapter: 'webchat', launcherType: 'person', launcherId: 'alice' });
  for (const launcherType of ['person', 'group']) {
    for (const launcherId of ['alice', 'webchat:person:alice', 'webchat:alice', ':alice']) {
      assert.notEqual(keys.sessionQueue({ botId: 'b', adapter: 'http-bot', launcherType, launcherId }), web, `${launcherType} ${launcherId}`);
    }
  }
  assert.equal(keys.sessionQueue({ botId: 'b', adapter: 'http-bot', launcherType: 'person', launcherId: 'alice' }), 'p:{p0}:session:{b:person:alice}:queue', 'platform keys are not namespaced');
});
