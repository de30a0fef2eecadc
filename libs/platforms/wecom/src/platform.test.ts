import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WebhookRequest } from '@conveyor/platform-kit';
import { WecomConfigSchema } from './config.js';
import { encryptWecom, wecomSignature } from './verify.js';
import { wecomInbound } from './platform.js';

const config = WecomConfigSchema.parse({ corpid: 'ww1', secret: 's', token: 'tok', EncodingAESKey: 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C' });
const now = new Date();

function signed(method: string, encrypted: string, body = '', extra: Record<string, string> = {}): WebhookRequest {
  const query = { timestamp: '1700000000', nonce: '42', msg_signature: wecomSignature('tok', '1700000000', '42', encrypted), ...extra };
  return { botId: 'b1', subPath: '', method, query, headers: {}, rawBody: Buffer.from(body), now };
}
const callback = (xml: string, receiver = 'ww1') => {
  const enc = encryptWecom(config.EncodingAESKey, xml, receiver);
  return signed('POST', enc, `<xml><ToUserName><![CDATA[ww1]]></ToUserName><Encrypt><![CDATA[${enc}]]></Encrypt></xml>`);
};
const msg = '<xml><ToUserName>ww1</ToUserName><FromUserName>u1</FromUserName><CreateTime>1</CreateTime><MsgType>text</MsgType><Content>hi</Content><MsgId>77</MsgId><AgentID>5</AgentID></xml>';

test('the URL check answers the decrypted echostr as text', () => {
  const enc = encryptWecom(config.EncodingAESKey, 'echo-123', 'ww1');
  assert.deepEqual(wecomInbound.handle(signed('GET', enc, '', { echostr: enc }), config), { kind: 'answer', answer: { status: 200, body: 'echo-123', type: 'text' } });
  const noEcho = wecomInbound.handle(signed('GET', 'x'), config);
  assert.equal(noEcho.kind === 'answer' && noEcho.answer.status, 400);
});

test('a text callback is one person query, de-duplicated by MsgId, replying through its agent', () => {
  assert.deepEqual(wecomInbound.handle(callback(msg), config), {
    kind: 'publish',
    ref: { msgId: '77', agentId: '5' },
    queries: [{ sessionId: 'u1', launcherType: 'person', senderId: 'u1', senderName: 'u1', messageChain: [{ type: 'Plain', text: 'hi' }], replyTo: '5:77', dedupId: '77', stream: false }],
  });
});

test('refusals: signature 401, another corp 400, other methods 405', () => {
  const status = (req: WebhookRequest) => {
    const o = wecomInbound.handle(req, config);
    return o.kind === 'answer' ? [o.answer.status, String(o.answer.body)] : [o.kind, ''];
  };
  const bad = callback(msg);
  assert.deepEqual(status({ ...bad, query: { ...bad.query, msg_signature: 'a'.repeat(40) } }), [401, 'invalid signature']);
  assert.deepEqual(status({ ...bad, query: { timestamp: '1', nonce: '2' } }), [401, 'invalid signature: missing msg_signature']);
  assert.deepEqual(status(callback(msg, 'ww2')), [400, 'bad corp id: the message is encrypted for another corp id']);
  assert.equal(status({ ...bad, method: 'PUT' })[0], 405);
  assert.deepEqual(status(callback('<xml><MsgType>event</MsgType><Event>subscribe</Event></xml>')), ['drop', '']);
});
