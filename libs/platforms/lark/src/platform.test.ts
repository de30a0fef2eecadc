import { test } from 'node:test';
import { createDecipheriv, createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { LarkConfigSchema } from './config.js';
import { decryptLarkEvent, encryptLarkEvent, larkSignature } from './verify.js';
import { hasPendingImages, pendingImage } from '@conveyor/platform-kit';
import { parseLarkBody } from './parse.js';
import { larkInbound } from './platform.js';

const BOT = '00000000-0000-4000-8000-000000000001';
const config = (extra: Record<string, unknown> = {}) => LarkConfigSchema.parse({ app_id: 'cli_1', app_secret: 's', bot_name: 'Bot', 'enable-webhook': true, 'verification-token': 'vt', ...extra });
const request = (body: unknown, headers: Record<string, string> = {}) => ({ botId: BOT, subPath: '', method: 'POST', query: {}, headers, rawBody: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), now: new Date() });
const message = (content: unknown, extra: Record<string, unknown> = {}) => ({
  schema: '2.0',
  header: { event_id: 'ev1', event_type: 'im.message.receive_v1', token: 'vt' },
  event: {
    sender: { sender_id: { open_id: 'ou_u', union_id: 'on_u' }, sender_type: 'user' },
    message: { message_id: 'om_1', chat_id: 'oc_1', chat_type: 'group', message_type: 'text', content: JSON.stringify(content), ...extra },
  },
});

test('an encrypted event decrypts with the key and not with another', () => {
  const enc = encryptLarkEvent('key', '{"a":1}');
  assert.equal(decryptLarkEvent('key', enc), '{"a":1}');
  assert.equal(decryptLarkEvent('other', enc), null);
  assert.equal(decryptLarkEvent('key', 'short'), null);
});

test('a wrong key whose noise passes the padding check still does not decrypt: 401, not a malformed event', () => {
  const plain = JSON.stringify(message({ text: 'x' }));
  // About one ciphertext in 256 has valid padding under another key; find one.
  let enc = '';
  for (let i = 0; i < 5_000 && !enc; i++) {
    const candidate = encryptLarkEvent('right', plain);
    const raw = Buffer.from(candidate, 'base64');
    const decipher = createDecipheriv('aes-256-cbc', createHash('sha256').update('wrong').digest(), raw.subarray(0, 16));
    try {
      decipher.update(raw.subarray(16));
      decipher.final();
      enc = candidate;
    } catch {
      // bad padding: the usual case
    }
  }
  assert.ok(enc, 'a ciphertext with valid padding under the wrong key');
  assert.equal(decryptLarkEvent('wrong', enc), null);
  const raw = JSON.stringify({ encrypt: enc });
  const headers = { 'x-lark-request-timestamp': '1', 'x-lark-request-nonce': 'n', 'x-lark-signature': larkSignature('wrong', '1', 'n', Buffer.from(raw)) };
  const outcome = larkInbound.handle(request(raw, headers), config({ 'encrypt-key': 'wrong' }));
  assert.equal(outcome.kind === 'answer' ? outcome.answer.status : 200, 401);
});

test('the signature is SHA-256 of timestamp, nonce, key and body', () => {
  // Computed independently: printf '1700000000nonce1key{}' | sha256sum
  assert.equal(larkSignature('key', '1700000000', 'nonce1', Buffer.from('{}')), 'c105189e506ae8ecafba7eac57b4f7bc689781acd425cf5a5763382385670cbc');
});

test('mention keys become Ats: the bot by its name, others by open_id; text around them stays', () => {
  const parsed = parseLarkBody(message({ text: '@_user_1 hi @_user_2 there' }, {
    mentions: [{ key: '@_user_1', id: { open_id: 'ou_bot' }, name: 'Bot' }, { key: '@_user_2', id: { open_id: 'ou_x' }, name: 'Xia' }],
  }), 'Bot', BOT);
  assert.equal(parsed.kind, 'message');
  if (parsed.kind !== 'message') return;
  assert.deepEqual(parsed.inbound.messageChain, [
    { type: 'At', target: BOT, display: 'Bot' },
    { type: 'Plain', text: 'hi' },
    { type: 'At', target: 'ou_x', display: 'Xia' },
    { type: 'Plain', text: 'there' },
  ]);
  assert.equal(parsed.inbound.launcherType, 'group');
  assert.equal(parsed.inbound.sessionId, 'oc_1');
});

test('a p2p message is a person chat keyed by the sender; an image is an Image by its key', () => {
  const parsed = parseLarkBody(message({ image_key: 'img_1' }, { chat_type: 'p2p', message_type: 'image' }), 'Bot', BOT);
  assert.equal(parsed.kind, 'message');
  if (parsed.kind !== 'message') return;
  assert.equal(parsed.inbound.launcherType, 'person');
  assert.equal(parsed.inbound.sessionId, 'ou_u');
  assert.deepEqual(parsed.inbound.messageChain, [{ type: 'Image', image_id: 'img_1', url: '', path: '', base64: '' }]);
});

test('an app sender, another event type and an unsupported message type are ignored', () => {
  const own = message({ text: 'x' });
  own.event.sender.sender_type = 'app';
  assert.equal(parseLarkBody(own, 'Bot', BOT).kind, 'ignored');
  assert.equal(parseLarkBody({ ...message({ text: 'x' }), header: { event_id: 'e', event_type: 'im.chat.member.bot.added_v1' } }, 'Bot', BOT).kind, 'ignored');
  assert.equal(parseLarkBody(message({}, { message_type: 'sticker' }), 'Bot', BOT).kind, 'ignored');
});

test('the inbound refuses a disabled webhook, an unverifiable bot, a wrong token, a bad signature', () => {
  const status = (o: ReturnType<typeof larkInbound.handle>) => (o.kind === 'answer' ? o.answer.status : 200);
  assert.equal(status(larkInbound.handle(request(message({ text: 'x' })), config({ 'enable-webhook': false }))), 403);
  assert.equal(status(larkInbound.handle(request(message({ text: 'x' })), config({ 'verification-token': '' }))), 403);
  assert.equal(status(larkInbound.handle(request({ ...message({ text: 'x' }), header: { event_id: 'e', event_type: 'im.message.receive_v1', token: 'no' } }), config())), 401);
  const withKey = config({ 'encrypt-key': 'k' });
  const raw = JSON.stringify({ encrypt: encryptLarkEvent('k', JSON.stringify(message({ text: 'x' }))) });
  const sign = (key: string) => ({ 'x-lark-request-timestamp': '1', 'x-lark-request-nonce': 'n', 'x-lark-signature': larkSignature(key, '1', 'n', Buffer.from(raw)) });
  assert.equal(status(larkInbound.handle(request(raw, sign('wrong')), withKey)), 401);
  const ok = larkInbound.handle(request(raw, sign('k')), withKey);
  assert.equal(ok.kind, 'publish');
  if (ok.kind === 'publish') assert.equal(ok.queries[0]?.dedupId, 'ev1');
});

test('a custom domain needs a URL', () => {
  assert.equal(LarkConfigSchema.safeParse({ app_id: 'a', app_secret: 's', domain: 'custom' }).success, false);
});

test('an image message and a post\'s img are pending images by their keys, for the adapter to download', () => {
  const event = (message_type: string, content: object) => ({
    schema: '2.0',
    header: { event_id: 'ev1', event_type: 'im.message.receive_v1', create_time: '1', token: 't', app_id: 'a', tenant_key: 'tk' },
    event: { sender: { sender_id: { open_id: 'ou1' }, sender_type: 'user' }, message: { message_id: 'om1', chat_id: 'oc1', chat_type: 'p2p', message_type, content: JSON.stringify(content) } },
  });
  const image = parseLarkBody(event('image', { image_key: 'img_k1' }), 'Bot', 'b1');
  assert.equal(image.kind, 'message');
  if (image.kind !== 'message') return;
  assert.deepEqual(image.inbound.messageChain, [pendingImage('img_k1')]);
  assert.equal(hasPendingImages(image.inbound.messageChain), true);
  const post = parseLarkBody(event('post', { content: [[{ tag: 'text', text: 'see' }, { tag: 'img', image_key: 'img_k2' }]] }), 'Bot', 'b1');
  assert.deepEqual(post.kind === 'message' && post.inbound.messageChain, [{ type: 'Plain', text: 'see' }, pendingImage('img_k2')]);
  const text = parseLarkBody(event('text', { text: 'hi' }), 'Bot', 'b1');
  assert.equal(text.kind === 'message' && hasPendingImages(text.inbound.messageChain), false);
});
