import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callbackAck, readFrame } from './stream.js';

const frame = (type: string, headers: Record<string, string>, data = '') => JSON.stringify({ specVersion: '1.0', type, headers, data });

test('a CALLBACK is handed over with its topic and data; its ack names the message id and answers {"response":null}', () => {
  const data = JSON.stringify({ msgId: 'm1', msgtype: 'text' });
  const action = readFrame(frame('CALLBACK', { topic: '/v1.0/im/bot/messages/get', messageId: 'frame-1', contentType: 'application/json', time: '1', appId: 'a' }, data));
  assert.deepEqual(action, { kind: 'callback', topic: '/v1.0/im/bot/messages/get', messageId: 'frame-1', data });
  assert.deepEqual(callbackAck('frame-1'), { code: 200, headers: { contentType: 'application/json', messageId: 'frame-1' }, message: 'OK', data: '{"response":null}' });
});

test('a SYSTEM ping is echoed with its data; a SYSTEM disconnect ends the connection', () => {
  const ping = readFrame(frame('SYSTEM', { topic: 'ping', messageId: 'p1', contentType: 'application/json' }, '{"opaque":"x"}'));
  assert.equal(ping.kind, 'reply');
  assert.ok(ping.kind === 'reply');
  assert.deepEqual(ping.frame, { code: 200, headers: { topic: 'ping', messageId: 'p1', contentType: 'application/json' }, message: 'OK', data: '{"opaque":"x"}' });
  assert.equal(readFrame(frame('SYSTEM', { topic: 'disconnect', messageId: 'd1' })).kind, 'disconnect');
  assert.equal(readFrame(frame('SYSTEM', { topic: 'CONNECTED', messageId: 'c1' })).kind, 'ignore');
});

test('an EVENT is acknowledged as handled', () => {
  const action = readFrame(frame('EVENT', { topic: 'chat_update_title', messageId: 'e1' }, '{}'));
  assert.ok(action.kind === 'reply');
  assert.deepEqual(action.frame, { code: 200, headers: { contentType: 'application/json', messageId: 'e1' }, message: 'OK', data: '{"status":"SUCCESS","message":"success"}' });
});

test('a frame that is no JSON, has no type, an unknown type or a CALLBACK without message id is malformed', () => {
  assert.equal(readFrame('{nope').kind, 'malformed');
  assert.equal(readFrame(JSON.stringify({ headers: {} })).kind, 'malformed');
  assert.equal(readFrame(frame('GOSSIP', { messageId: 'x' })).kind, 'malformed');
  assert.equal(readFrame(frame('CALLBACK', { topic: '/v1.0/im/bot/messages/get' }, '{}')).kind, 'malformed');
});
