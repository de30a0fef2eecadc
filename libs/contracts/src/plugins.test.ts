import { test } from 'node:test';
import assert from 'node:assert/strict';
import { foldPluginReply, noPluginOutcome, PluginEventReply, type PluginEventPayload } from './plugins.js';

const event: PluginEventPayload = { event_name: 'PersonNormalMessageReceived', launcher_type: 'person', launcher_id: 'u', sender_id: 'u', text_message: 'hi', message_chain: [{ type: 'Plain', text: 'hi' }] };

test('foldPluginReply: prevent_default stays set, later values replace earlier ones, prompts only on PromptPreProcessing', () => {
  const outcome = noPluginOutcome();
  foldPluginReply(outcome, event, PluginEventReply.parse({ v: 1, prevent_default: true, user_message_alter: 'a', prompt: [] }), 'x/1');
  foldPluginReply(outcome, event, PluginEventReply.parse({ v: 1, user_message_alter: 'b', reply_message_chain: [{ type: 'Plain', text: 'r' }] }), 'x/2');
  assert.deepEqual(outcome, { preventDefault: true, userMessageAlter: 'b', replyMessageChain: [{ type: 'Plain', text: 'r' }], answered: ['x/1', 'x/2'] });
});
