import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LIMITS } from './limits.js';
import { MessageChainSchema, type MessageComponent } from './message-chain.js';
import { QueryEnvelope } from './messages.js';

const quoted = (depth: number): MessageComponent => {
  let c: MessageComponent = { type: 'Plain', text: 'innermost' };
  for (let i = 0; i < depth; i++) c = { type: 'Quote', id: null, group_id: null, sender_id: null, target_id: null, origin: [c] };
  return c;
};

const forwarded = (depth: number): MessageComponent => {
  let c: MessageComponent = { type: 'Plain', text: 'innermost' };
  for (let i = 0; i < depth; i++) {
    c = {
      type: 'Forward',
      display: { title: '', brief: '', source: '', preview: [], summary: '' },
      node_list: [{ sender_id: null, sender_name: '', message_chain: [c], message_id: 0 }],
    };
  }
  return c;
};

test('chains nested up to the limit validate', () => {
  assert.equal(MessageChainSchema.safeParse([quoted(LIMITS.messageChainDepth)]).success, true);
  assert.equal(MessageChainSchema.safeParse([forwarded(LIMITS.messageChainDepth)]).success, true);
});

test('deeper nesting is an ordinary validation failure, also where the recursion would exhaust the stack', () => {
  for (const component of [quoted(LIMITS.messageChainDepth + 1), forwarded(LIMITS.messageChainDepth + 1), quoted(1_000), forwarded(1_000), quoted(50_000)]) {
    const result = MessageChainSchema.safeParse([{ type: 'Plain', text: 'first' }, component]);
    assert.equal(result.success, false);
    assert.match(result.error!.issues[0].message, /nest/);
  }
});

test('a query envelope with a runaway chain fails validation instead of throwing', () => {
  const envelope = {
    v: 1,
    queryId: '3f2b8c1d-9e7a-4b6c-8d0e-1f2a3b4c5d6e',
    receivedAt: new Date().toISOString(),
    route: { botId: 'b', adapter: 'http-bot', sessionId: 's', launcherType: 'person', launcherId: 's', senderId: 's', replyTo: 'in_1' },
    senderName: 'User',
    messageChain: [quoted(1_000)],
  };
  assert.equal(QueryEnvelope.safeParse(envelope).success, false);
  assert.equal(QueryEnvelope.safeParse({ ...envelope, messageChain: [quoted(3)] }).success, true);
});

test('the component count is bounded', () => {
  const plain: MessageComponent = { type: 'Plain', text: 'x' };
  assert.equal(MessageChainSchema.safeParse(new Array(LIMITS.messageChainComponents).fill(plain)).success, true);
  assert.equal(MessageChainSchema.safeParse(new Array(LIMITS.messageChainComponents + 1).fill(plain)).success, false);
});
