import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt, randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { sendLarkEvent, startFakeLark, type FakeLark } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';

/**
 * Lark / Feishu event subscription at `POST /bots/{bot_id}` through all four services, against the
 * fake Open API: the challenge (plain and encrypted), a direct message answered once though Lark
 * redelivers it, a group mention streamed into one card patched up to the whole answer, and
 * forged, unverified or malformed requests refused with nothing published.
 */
describe('Lark event subscription at /bots/{bot_id}', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let lark: FakeLark;
  let ingress: string;
  const appId = `cli_${uniqueName('app')}`;
  const appSecret = uniqueName('app-secret');
  const verificationToken = uniqueName('vtoken');
  const encryptKey = uniqueName('encrypt-key');
  const botName = 'Conveyor Bot';
  const plainBotId = randomUUID();
  const encryptedBotId = randomUUID();

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const openId = () => `ou_${randomInt(1, 2 ** 40).toString(16)}`;
  const messageEvent = (opts: { chatType: 'p2p' | 'group'; sender: string; chatId: string; text: string; mentions?: unknown[]; token?: string; senderType?: string }) => {
    const messageId = `om_in_${randomInt(1, 2 ** 40)}`;
    return {
      messageId,
      body: {
        schema: '2.0',
        header: { event_id: `ev_${randomUUID()}`, event_type: 'im.message.receive_v1', create_time: String(Date.now()), token: opts.token ?? verificationToken, app_id: appId, tenant_key: 'tk' },
        event: {
          sender: { sender_id: { open_id: opts.sender, union_id: `on_${opts.sender}` }, sender_type: opts.senderType ?? 'user', tenant_key: 'tk' },
          message: {
            message_id: messageId, chat_id: opts.chatId, chat_type: opts.chatType, message_type: 'text', create_time: String(Date.now()),
            content: JSON.stringify({ text: opts.text }), ...(opts.mentions ? { mentions: opts.mentions } : {}),
          },
        },
      },
    };
  };

  before(async () => {
    sys = await startTestSystem({ modelAbilities: ['func_call', 'vision'] });
    nc = await connect({ servers: NATS_URL });
    lark = await startFakeLark({ appId, appSecret });
    const common = { app_id: appId, app_secret: appSecret, bot_name: botName, 'enable-webhook': true, domain: 'custom', custom_domain: lark.url };
    await addBot(sys, 'Lark bot', 'lark', { ...common, 'verification-token': verificationToken }, plainBotId);
    await addBot(sys, 'Encrypted Lark bot', 'lark', { ...common, 'verification-token': verificationToken, 'encrypt-key': encryptKey, 'enable-stream-reply': true }, encryptedBotId);
    ingress = sys.services.get('ingress').url;
  });

  after(async () => {
    await nc?.close();
    await lark?.close();
    await sys?.stop();
  });

  test('the url_verification challenge is answered, plain and encrypted', async () => {
    const plain = await sendLarkEvent(`${ingress}/bots/${plainBotId}`, { type: 'url_verification', challenge: 'ajls384kdjx98XX', token: verificationToken });
    assert.equal(plain.status, 200);
    assert.deepEqual(await plain.json(), { challenge: 'ajls384kdjx98XX' });
    // Lark sends the challenge unsigned, encrypted with the key.
    const encrypted = await sendLarkEvent(`${ingress}/bots/${encryptedBotId}`, { type: 'url_verification', challenge: 'enc-challenge-42', token: verificationToken }, { encryptKey, unsigned: true });
    assert.equal(encrypted.status, 200);
    assert.deepEqual(await encrypted.json(), { challenge: 'enc-challenge-42' });
    const wrongToken = await sendLarkEvent(`${ingress}/bots/${plainBotId}`, { type: 'url_verification', challenge: 'x', token: 'not-the-token' });
    assert.equal(wrongToken.status, 401);
  });

  test('a direct message is answered once though Lark delivers the event again', async () => {
    const answer = `Lark answer ${uniqueName('a')}`;
    sys.llm.setDefault({ text: answer });
    const user = openId();
    const { messageId, body } = messageEvent({ chatType: 'p2p', sender: user, chatId: `oc_${randomInt(1, 2 ** 40)}`, text: 'hello there' });
    const first = await sendLarkEvent(`${ingress}/bots/${plainBotId}`, body);
    assert.equal(first.status, 200);
    const again = await sendLarkEvent(`${ingress}/bots/${plainBotId}`, body);
    assert.equal(again.status, 200);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 30_000);
    // A later message of the chat is answered too; by then the redelivery would have been.
    const next = `Lark second ${uniqueName('b')}`;
    sys.llm.setDefault({ text: next });
    const second = messageEvent({ chatType: 'p2p', sender: user, chatId: `oc_${randomInt(1, 2 ** 40)}`, text: 'and again' });
    assert.equal((await sendLarkEvent(`${ingress}/bots/${plainBotId}`, second.body)).status, 200);
    await lark.waitFor(() => lark.repliesTo(second.messageId).some((m) => m.text === next), 30_000);
    assert.deepEqual(lark.repliesTo(messageId).map((m) => [m.msgType, m.text]), [['text', answer]], 'one reply, the redelivered event answered once');
    assert.ok(lark.tokensIssued() >= 1);
  });

  test('an image message: the image is downloaded with the app\'s token and reaches the model inline; one Lark does not have becomes [Image]', async () => {
    const answer = `Lark image ${uniqueName('i')}`;
    sys.llm.setDefault({ text: answer });
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
    const image = (imageKey: string) => {
      const e = messageEvent({ chatType: 'p2p', sender: openId(), chatId: `oc_${randomInt(1, 2 ** 40)}`, text: '' });
      Object.assign(e.body.event.message, { message_type: 'image', content: JSON.stringify({ image_key: imageKey }) });
      return e;
    };
    const kept = image('img_v3_kept');
    lark.addResource(kept.messageId, 'img_v3_kept', png, 'image/png');
    const before = sys.llm.requests.length;
    assert.equal((await sendLarkEvent(`${ingress}/bots/${plainBotId}`, kept.body)).status, 200);
    await lark.waitFor(() => lark.repliesTo(kept.messageId).some((m) => m.text === answer), 30_000);
    const user = sys.llm.requests.slice(before).map((r) => r.body.messages?.findLast((m: { role: string }) => m.role === 'user')).find((m) => JSON.stringify(m).includes('image_url'));
    assert.deepEqual(user?.content, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }]);

    const gone = image('img_v3_gone');
    const seen = sys.llm.requests.length;
    assert.equal((await sendLarkEvent(`${ingress}/bots/${plainBotId}`, gone.body)).status, 200);
    await lark.waitFor(() => lark.repliesTo(gone.messageId).some((m) => m.text === answer), 30_000);
    assert.ok(sys.llm.requests.slice(seen).some((r) => JSON.stringify(r.body.messages?.at(-1)).includes('[Image]')), 'the model got [Image]');
    assert.ok(sys.services.allLogs().split('\n').some((l) => l.includes('Lark image not downloaded') && l.includes(plainBotId) && l.includes('234003')));
  });

  test('a group mention is streamed into one card, patched until the whole answer shows', async () => {
    const answer = `Group answer ${Array.from({ length: 18 }, (_, i) => `w${i}`).join(' ')}`;
    sys.llm.setDefault({ text: answer });
    const { messageId, body } = messageEvent({
      chatType: 'group', sender: openId(), chatId: `oc_${randomInt(1, 2 ** 40)}`, text: '@_user_1 tell me',
      mentions: [{ key: '@_user_1', id: { open_id: 'ou_bot' }, name: botName, tenant_key: 'tk' }],
    });
    const res = await sendLarkEvent(`${ingress}/bots/${encryptedBotId}`, body, { encryptKey });
    assert.equal(res.status, 200);
    await lark.waitFor(() => lark.repliesTo(messageId).some((m) => m.text === answer), 30_000);
    const cards = lark.repliesTo(messageId);
    assert.equal(cards.length, 1, 'one card, patched in place');
    assert.equal(cards[0]!.msgType, 'interactive');
    assert.ok(cards[0]!.patches >= 1, `sent, then patched (${cards[0]!.patches} patches)`);
    const patches = lark.calls.filter((c) => c.method === 'PATCH' && c.path.endsWith(`/${cards[0]!.messageId}`));
    assert.equal(patches.length, cards[0]!.patches);
  });

  test('a bad signature or token is 401, a malformed event is 400; nothing is published', async () => {
    const before = await lastQuerySeq();
    const plainUrl = `${ingress}/bots/${plainBotId}`;
    const encUrl = `${ingress}/bots/${encryptedBotId}`;
    const event = () => messageEvent({ chatType: 'p2p', sender: openId(), chatId: 'oc_1', text: 'forged' }).body;
    const forged = await sendLarkEvent(encUrl, event(), { encryptKey, signWith: 'not-the-key' });
    assert.equal(forged.status, 401);
    assert.deepEqual(await forged.json(), { code: 401, msg: 'invalid signature: signature_mismatch' });
    const unsigned = await sendLarkEvent(encUrl, event(), { encryptKey, unsigned: true });
    assert.equal(unsigned.status, 401);
    const notEncrypted = await sendLarkEvent(encUrl, event());
    assert.equal(notEncrypted.status, 401);
    const wrongKey = await sendLarkEvent(encUrl, event(), { encryptKey: 'another-key', signWith: encryptKey });
    assert.equal(wrongKey.status, 401);
    const wrongToken = await sendLarkEvent(plainUrl, messageEvent({ chatType: 'p2p', sender: openId(), chatId: 'oc_1', text: 'x', token: 'not-the-token' }).body);
    assert.equal(wrongToken.status, 401);
    assert.deepEqual(await wrongToken.json(), { code: 401, msg: 'invalid verification token' });
    const notJson = await sendLarkEvent(plainUrl, null, { rawBody: '{"schema": ' });
    assert.equal(notJson.status, 400);
    const noEventId = await sendLarkEvent(plainUrl, { schema: '2.0', header: { event_type: 'im.message.receive_v1', token: verificationToken }, event: {} });
    assert.equal(noEventId.status, 400);
    assert.match(((await noEventId.json()) as { msg: string }).msg, /header\.event_id/);
    const badContent = event();
    badContent.event.message.content = 'not json';
    const badContentRes = await sendLarkEvent(plainUrl, badContent);
    assert.equal(badContentRes.status, 400);
    assert.match(((await badContentRes.json()) as { msg: string }).msg, /event\.message\.content/);
    // The bot's own message (an app sender) is acknowledged, never a query.
    const own = await sendLarkEvent(plainUrl, messageEvent({ chatType: 'p2p', sender: openId(), chatId: 'oc_1', text: 'my reply', senderType: 'app' }).body);
    assert.equal(own.status, 200);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
  });
});
