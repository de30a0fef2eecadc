import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTelegramInbound, type TelegramInbound } from './parse.js';

const inbound = (fields: Partial<TelegramInbound> = {}): TelegramInbound => ({
  updateId: 1,
  sessionId: '-1001234567890',
  launcherType: 'group',
  senderId: '42',
  senderName: 'Ann',
  groupName: 'Team',
  messageId: '7',
  messageChain: [{ type: 'Plain', text: 'hi' }],
  ...fields,
});

test('an ordinary update passes unchanged', () => {
  assert.deepEqual(checkTelegramInbound(inbound()), { ok: true, inbound: inbound() });
  const person = inbound({ launcherType: 'person', sessionId: '42', groupName: undefined });
  delete person.groupName;
  assert.deepEqual(checkTelegramInbound(person), { ok: true, inbound: person });
});

test('ids that are no Telegram ids are refused', () => {
  for (const id of ['1e+308', '1.5', 'NaN', '', '9007199254740993', '12345678901234567']) {
    assert.deepEqual(checkTelegramInbound(inbound({ sessionId: id })), { ok: false, reason: 'the chat id is not a Telegram id' }, id);
    assert.deepEqual(checkTelegramInbound(inbound({ senderId: id })), { ok: false, reason: 'the sender id is not a Telegram id' }, id);
  }
  assert.equal(checkTelegramInbound(inbound({ sessionId: '-9007199254740991' })).ok, true);
});

test('names past the bound are refused; at the bound they pass', () => {
  assert.deepEqual(checkTelegramInbound(inbound({ senderName: 'n'.repeat(1001) })), { ok: false, reason: 'the sender name is longer than 1000 characters' });
  assert.deepEqual(checkTelegramInbound(inbound({ groupName: 't'.repeat(1001) })), { ok: false, reason: 'the chat title is longer than 1000 characters' });
  assert.equal(checkTelegramInbound(inbound({ senderName: 'n'.repeat(1000), groupName: 't'.repeat(1000) })).ok, true);
});

test('NUL and lone surrogates are made storable in names and text', () => {
  const checked = checkTelegramInbound(inbound({ senderName: 'A\u0000nn\ud800', groupName: 'Te\u0000am', messageChain: [{ type: 'Plain', text: 'h\u0000i \udc00' }] }));
  assert.deepEqual(checked, { ok: true, inbound: inbound({ senderName: 'Ann\uFFFD', groupName: 'Team', messageChain: [{ type: 'Plain', text: 'hi \uFFFD' }] }) });
});
