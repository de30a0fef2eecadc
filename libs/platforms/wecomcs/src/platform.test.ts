import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WebhookRequest } from '@conveyor/platform-kit';
import { encryptWecom, wecomSignature } from '@conveyor/wecom';
import { WecomCsConfigSchema } from './config.js';
import { kfReplyTo, openKfIdOf, parseKfEvent, readKfMessage } from './parse.js';
import { wecomCsInbound } from './platform.js';

const config = WecomCsConfigSchema.parse({ corpid: 'ww1', secret: 's', token: 'tok', EncodingAESKey: 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C' });
const event = (token = 'T1', kf = 'wkAAA') => `<xml><ToUserName>ww1</ToUserName><CreateTime>1</CreateTime><MsgType>event</MsgType><Event>kf_msg_or_event</Event><Token>${token}</Token><OpenKfId>${kf}</OpenKfId></xml>`;
function callback(xml: string, receiver = 'ww1'): WebhookRequest {
  const enc = encryptWecom(config.EncodingAESKey, xml, receiver);
  return { botId: 'b1', subPath: '', method: 'POST', query: { timestamp: '1', nonce: '2', msg_signature: wecomSignature('tok', '1', '2', enc) }, headers: {}, rawBody: Buffer.from(`<xml><Encrypt><![CDATA[${enc}]]></Encrypt></xml>`), now: new Date() };
}

test('a kf_msg_or_event callback becomes a pull; other events are dropped; refusals come before parsing', () => {
  const o = wecomCsInbound.handle(callback(event()), config);
  assert.equal(o.kind, 'pull');
  assert.deepEqual(o.kind === 'pull' && o.ref, { openKfId: 'wkAAA' });
  assert.equal(wecomCsInbound.handle(callback('<xml><MsgType>event</MsgType><Event>enter_session</Event></xml>'), config).kind, 'drop');
  const bad = callback(event());
  const forged = wecomCsInbound.handle({ ...bad, query: { ...bad.query, msg_signature: 'a'.repeat(40) } }, config);
  assert.equal(forged.kind === 'answer' && forged.answer.status, 401);
  const other = wecomCsInbound.handle(callback(event(), 'ww2'), config);
  assert.equal(other.kind === 'answer' && other.answer.status, 400);
  const malformed = wecomCsInbound.handle(callback(event('', 'wk')), config);
  assert.match(malformed.kind === 'answer' ? String(malformed.answer.body) : '', /^malformed event: Token/);
  assert.deepEqual(parseKfEvent(event('T', 'bad id!')).ok, false);
});

test('sync_msg entries: a customer text or image is a message; servicers, events, other media and junk are skipped with a reason', () => {
  const base = { msgid: 'm1', open_kfid: 'wkAAA', external_userid: 'wmC', send_time: 1700000000, origin: 3, msgtype: 'text', text: { content: 'hi' } };
  assert.deepEqual(readKfMessage(base), { message: { msgId: 'm1', openKfId: 'wkAAA', customerId: 'wmC', sendTime: 1700000000, messageChain: [{ type: 'Plain', text: 'hi' }] } });
  assert.deepEqual(readKfMessage({ ...base, origin: 5 }), { skipped: 'origin 5' });
  assert.deepEqual(readKfMessage({ ...base, msgtype: 'image', text: undefined }), { skipped: 'msgtype image' }, 'an image without its media id');
  assert.deepEqual(readKfMessage({ ...base, msgtype: 'image', text: undefined, image: { media_id: 'MEDIA1' } }), { message: { msgId: 'm1', openKfId: 'wkAAA', customerId: 'wmC', sendTime: 1700000000, messageChain: [{ type: 'Image', image_id: 'MEDIA1', url: '', path: '', base64: '' }] } });
  assert.deepEqual(readKfMessage({ ...base, msgtype: 'voice', text: undefined, voice: { media_id: 'V' } }), { skipped: 'msgtype voice' });
  assert.deepEqual(readKfMessage({ ...base, text: { content: ' ' } }), { skipped: 'empty text' });
  assert.match((readKfMessage({ msgid: 1 }) as { skipped: string }).skipped, /^malformed/);
  assert.equal(openKfIdOf(kfReplyTo('wkAAA', 'm1')), 'wkAAA');
  assert.equal(openKfIdOf('nothing'), undefined);
});
