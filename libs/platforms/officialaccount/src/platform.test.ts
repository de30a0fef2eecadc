import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpAnswer, WebhookOutcome, WebhookRequest } from '@conveyor/platform-kit';
import { decryptWecom, encryptWecom, parseXmlFields, sortedSha1 } from '@conveyor/wecom';
import { OfficialAccountConfigSchema } from './config.js';
import { cdata, parseOfficialAccountMessage } from './parse.js';
import { officialAccountInbound, PASSIVE_WINDOW_MS } from './platform.js';

const KEY = 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C';
const config = OfficialAccountConfigSchema.parse({ token: 'tok', EncodingAESKey: KEY, AppSecret: 's', AppID: 'wx5823bf96d3bd56c7' });
const NOW = 1_700_000_000_000;
const inbound = officialAccountInbound(() => NOW);
const ts = String(NOW / 1000);

function plain(method: string, body = '', extra: Record<string, string> = {}): WebhookRequest {
  const query = { timestamp: ts, nonce: '42', signature: sortedSha1(['tok', ts, '42']), openid: 'o1', ...extra };
  return { botId: 'b1', subPath: '', method, query, headers: {}, rawBody: Buffer.from(body), now: new Date(NOW) };
}
function encrypted(xml: string, appId = config.AppID, key = KEY): WebhookRequest {
  const enc = encryptWecom(key, xml, appId);
  const query = { timestamp: ts, nonce: '42', signature: sortedSha1(['tok', ts, '42']), encrypt_type: 'aes', msg_signature: sortedSha1(['tok', ts, '42', enc]), openid: 'o1' };
  return { botId: 'b1', subPath: '', method: 'POST', query, headers: {}, rawBody: Buffer.from(`<xml><ToUserName><![CDATA[gh_1]]></ToUserName><Encrypt><![CDATA[${enc}]]></Encrypt></xml>`), now: new Date(NOW) };
}
const msg = (content = 'hi') => `<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[o1]]></FromUserName><CreateTime>1</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[${content}]]></Content><MsgId>77</MsgId></xml>`;
const status = (o: WebhookOutcome) => (o.kind === 'answer' ? [o.answer.status, String(o.answer.body)] : [o.kind, '']);

test('the URL check returns the echostr as it came, under a valid signature only', () => {
  assert.deepEqual(inbound.handle(plain('GET', '', { echostr: 'e-123' }), config), { kind: 'answer', answer: { status: 200, body: 'e-123', type: 'text' } });
  assert.deepEqual(status(inbound.handle({ ...plain('GET', '', { echostr: 'e' }), query: { timestamp: ts, nonce: '42', signature: 'f'.repeat(40), echostr: 'e' } }, config)), [401, 'invalid signature']);
  assert.equal(status(inbound.handle(plain('GET'), config))[0], 400);
});

test('a plain text message is one person query held for its passive reply, its signed query taken once', () => {
  const o = inbound.handle(plain('POST', msg()), config);
  assert.equal(o.kind, 'publish');
  if (o.kind !== 'publish') return;
  assert.deepEqual(o.queries, [{ sessionId: 'o1', launcherType: 'person', senderId: 'o1', senderName: 'o1', messageChain: [{ type: 'Plain', text: 'hi' }], replyTo: '77', dedupId: '77', stream: false }]);
  assert.equal(o.once?.id, `${ts}:42:${sortedSha1(['tok', ts, '42'])}`);
  assert.equal(o.hold?.key, '77');
  assert.equal(o.hold?.waitMs, PASSIVE_WINDOW_MS);
  const answer = o.hold!.answer([{ type: 'Plain', text: 'hello ]]> there' }]);
  const fields = parseXmlFields(String(answer.body));
  assert.deepEqual(fields, { ok: true, fields: { ToUserName: 'o1', FromUserName: 'gh_1', CreateTime: String(NOW / 1000), MsgType: 'text', Content: 'hello ]]> there' } });
  assert.deepEqual(o.hold!.timeout, { status: 200, body: 'success', type: 'text' });
  assert.deepEqual(o.hold!.answer([]), o.hold!.timeout, 'an empty hand-over: the reply goes out through the API');
  assert.deepEqual(o.hold!.answer([{ type: 'Plain', text: 'x'.repeat(2049) }]), o.hold!.timeout, 'too long to be passive');
});

test('an encrypted message is opened for the AppID; its passive reply is encrypted and signed back', () => {
  const o = inbound.handle(encrypted(msg('你好')), config);
  assert.equal(o.kind, 'publish');
  if (o.kind !== 'publish') return;
  assert.equal(o.once, undefined, 'the signature covers the body');
  assert.deepEqual(o.queries[0]?.messageChain, [{ type: 'Plain', text: '你好' }]);
  const outer = parseXmlFields(String(o.hold!.answer([{ type: 'Plain', text: '答复' }]).body));
  assert.ok(outer.ok);
  if (!outer.ok) return;
  const { Encrypt: enc = '', MsgSignature: sig, TimeStamp: t = '', Nonce: n = '' } = outer.fields;
  assert.equal(sig, sortedSha1(['tok', t, n, enc]));
  const inner = decryptWecom(KEY, enc, config.AppID);
  assert.ok(inner.ok);
  if (inner.ok) assert.equal(parseXmlFields(inner.message).ok && (parseXmlFields(inner.message) as { fields: Record<string, string> }).fields['Content'], '答复');
});

test('passive mode answers a late reply with LoadingMessage', () => {
  const passive = OfficialAccountConfigSchema.parse({ ...config, Mode: 'passive', LoadingMessage: 'thinking…' });
  const o = inbound.handle(plain('POST', msg()), passive);
  assert.equal(o.kind, 'publish');
  if (o.kind !== 'publish') return;
  const late: HttpAnswer = o.hold!.timeout;
  const f = parseXmlFields(String(late.body));
  assert.ok(f.ok && f.fields['Content'] === 'thinking…');
});

test('refusals before parsing: signatures 401, another AppID or key 400, stale timestamp 401, methods 405; events dropped', () => {
  const bad = plain('POST', msg());
  assert.deepEqual(status(inbound.handle({ ...bad, query: { ...bad.query, signature: 'a'.repeat(40) } }, config)), [401, 'invalid signature']);
  assert.deepEqual(status(inbound.handle({ ...bad, query: { timestamp: ts, nonce: '1' } }, config)), [401, 'invalid signature: missing signature']);
  const stale = String(NOW / 1000 - 3600);
  assert.deepEqual(status(inbound.handle({ ...bad, query: { timestamp: stale, nonce: '42', signature: sortedSha1(['tok', stale, '42']) } }, config)), [401, 'invalid signature: the timestamp is outside the accepted window']);
  const enc = encrypted(msg());
  assert.deepEqual(status(inbound.handle({ ...enc, query: { ...enc.query, msg_signature: 'b'.repeat(40) } }, config)), [401, 'invalid signature']);
  assert.deepEqual(status(inbound.handle(encrypted(msg(), 'wx-other'), config)), [400, 'bad AppID: the message is encrypted for another AppID']);
  assert.match(String(status(inbound.handle(encrypted(msg(), config.AppID, 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG'), config))[1]), /^undecryptable message: /);
  assert.match(String(status(inbound.handle(plain('POST', '<xml><MsgType>text</MsgType><Content>x'), config))[1]), /^malformed message: /);
  assert.match(String(status(inbound.handle(plain('POST', msg().replace('<MsgId>77</MsgId>', '')), config))[1]), /MsgId/);
  assert.equal(status(inbound.handle({ ...bad, method: 'PUT' }, config))[0], 405);
  const event = inbound.handle(plain('POST', '<xml><ToUserName>gh_1</ToUserName><FromUserName>o1</FromUserName><MsgType>event</MsgType><Event>subscribe</Event></xml>'), config);
  assert.equal(event.kind, 'drop');
  const noKey = OfficialAccountConfigSchema.parse({ ...config, EncodingAESKey: '' });
  assert.match(String(status(inbound.handle(encrypted(msg()), noKey))[1]), /no EncodingAESKey/);
});

test('message parsing: image by URL, voice skipped, a DOCTYPE refused; CDATA keeps a `]]>`', () => {
  const img = parseOfficialAccountMessage('<xml><ToUserName>gh_1</ToUserName><FromUserName>o1</FromUserName><CreateTime>1</CreateTime><MsgType>image</MsgType><PicUrl>http://x/y.jpg</PicUrl><MediaId>m1</MediaId><MsgId>9</MsgId></xml>');
  assert.deepEqual(img, { ok: true, message: { msgId: '9', openId: 'o1', accountId: 'gh_1', messageChain: [{ type: 'Image', image_id: 'm1', url: 'http://x/y.jpg', path: '', base64: '' }] } });
  assert.deepEqual(parseOfficialAccountMessage('<xml><MsgType>voice</MsgType></xml>'), { ok: true, message: null, skipped: 'MsgType voice' });
  assert.equal(parseOfficialAccountMessage('<!DOCTYPE x [<!ENTITY a "b">]><xml/>').ok, false);
  assert.deepEqual(parseXmlFields(`<xml><A>${cdata('a]]>b')}</A></xml>`), { ok: true, fields: { A: 'a]]>b' } });
});
