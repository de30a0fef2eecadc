import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { echoResponder, sendDingtalkCallback, startFakeDingtalk, type FakeDingtalk } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { Redis } from 'ioredis';

async function withRedis<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(REDIS_URL);
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

const HTTP_APP = { clientId: 'dinghttpapp', clientSecret: `http-secret-${randomUUID()}` };
const STREAM_APP = { clientId: 'dingstreamapp', clientSecret: `stream-secret-${randomUUID()}` };
const CARD_APP = { clientId: 'dingcardapp', clientSecret: `card-secret-${randomUUID()}` };
const STREAMED = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

/**
 * DingTalk through all services against the fake DingTalk. HTTP mode: a signed callback at
 * `/bots/{bot_id}` answered at the message's session webhook (or, once it expired, through the robot
 * OpenAPI); a bad or stale sign and a malformed body refused, publishing nothing. Stream mode: the
 * gateway opens the app's Stream connection, a CALLBACK frame is acknowledged and answered, a ping
 * echoed, a message DingTalk delivers again answered once, and a disconnect followed by a new connection.
 */
describe('DingTalk: HTTP callbacks at /bots/{bot_id} and Stream mode through the gateway', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let dingtalk: FakeDingtalk;
  let url: string;
  let httpBot: string;
  let streamBot: string;

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const staff = () => uniqueName('staff').replace(/[^\w-]/g, '_');

  before(async () => {
    // Debug lines too: the session webhook a reply goes to is a credential and must not reach them either.
    sys = await startTestSystem({ serviceEnv: { LOG_LEVEL: 'debug' } });
    nc = await connect({ servers: NATS_URL });
    dingtalk = await startFakeDingtalk({ apps: [HTTP_APP, STREAM_APP, CARD_APP] });
    sys.llm.setDefault(async (body, n) => {
      const echo = await echoResponder(body, n);
      return echo.text?.includes('stream please') ? { text: STREAMED, tokensPerSecond: 20 } : echo;
    });
    httpBot = await addBot(sys, 'DingTalk (HTTP)', 'dingtalk', { client_id: HTTP_APP.clientId, client_secret: HTTP_APP.clientSecret, robot_code: 'dingrobot', robot_name: 'Conveyor', markdown_card: false, mode: 'http', api_base_url: dingtalk.apiBaseUrl });
    streamBot = await addBot(sys, 'DingTalk (Stream)', 'dingtalk', { client_id: STREAM_APP.clientId, client_secret: STREAM_APP.clientSecret, robot_code: 'dingrobot', robot_name: 'Conveyor', api_base_url: dingtalk.apiBaseUrl });
    await addBot(sys, 'DingTalk (AI card)', 'dingtalk', { client_id: CARD_APP.clientId, client_secret: CARD_APP.clientSecret, robot_code: 'dingrobot', 'enable-stream-reply': true, card_template_id: 'tpl.schema', api_base_url: dingtalk.apiBaseUrl });
    url = `${sys.services.get('ingress').url}/bots/${httpBot}`;
    await sys.services.start('gateway', {}, 'gateway-1');
    await dingtalk.waitForStream((f) => f.stream.get(STREAM_APP.clientId)?.open === 1 && f.stream.get(CARD_APP.clientId)?.open === 1, 60_000);
  });

  after(async () => {
    await nc?.close();
    await sys?.stop();
    await dingtalk?.close();
  });

  test('HTTP mode: a signed private message is answered at its session webhook; DingTalk sending it again is answered once', async () => {
    const user = staff();
    const message = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'hello over http' });
    const res = await sendDingtalkCallback(url, HTTP_APP.clientSecret, message);
    assert.equal(res.status, 200);
    assert.equal((await sendDingtalkCallback(url, HTTP_APP.clientSecret, message)).status, 200);
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: hello over http'), 60_000);
    // A later message of the same person is answered too; by then a duplicate would have been.
    assert.equal((await sendDingtalkCallback(url, HTTP_APP.clientSecret, dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'and again' }))).status, 200);
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: and again'), 60_000);
    const mine = dingtalk.shown.filter((m) => m.to === user);
    assert.deepEqual(mine.map((m) => [m.via, m.msgtype, m.text]), [['session', 'text', 'Echo: hello over http'], ['session', 'text', 'Echo: and again']]);
  });

  test('HTTP mode: a group mention is answered in the group mentioning the asker; an expired webhook gives way to the robot OpenAPI', async () => {
    const user = staff();
    const group = `cid${uniqueName('g').replace(/[^\w]/g, '')}==`;
    const asked = dingtalk.robotMessage({ conversationType: '2', conversationId: group, conversationTitle: 'Team', senderStaffId: user, text: '@Conveyor group question', atBot: true });
    assert.equal((await sendDingtalkCallback(url, HTTP_APP.clientSecret, asked)).status, 200);
    await dingtalk.waitFor((s) => s.some((m) => m.to === group && m.text.includes('Echo: group question')), 60_000);
    const answer = dingtalk.shown.find((m) => m.to === group)!;
    assert.equal(answer.via, 'session');
    assert.deepEqual(answer.atUserIds, [user], 'the asker is mentioned, as the pipeline\'s at-sender asks');
    const expired = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'late reply', webhookExpiresAt: Date.now() - 1_000 });
    assert.equal((await sendDingtalkCallback(url, HTTP_APP.clientSecret, expired)).status, 200);
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: late reply'), 60_000);
    assert.equal(dingtalk.shown.find((m) => m.text === 'Echo: late reply')!.via, 'batchSend');
    assert.ok(dingtalk.tokensIssued() >= 1);
  });

  test('HTTP mode: a bad or stale sign is 401, a malformed body 400, a Stream mode bot takes no callbacks; nothing is published', async () => {
    const before = await lastQuerySeq();
    const user = staff();
    const message = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'forged' });
    const forged = await sendDingtalkCallback(url, 'not-the-secret', message);
    assert.equal(forged.status, 401);
    assert.deepEqual(await forged.json(), { errcode: 401, errmsg: 'invalid signature: sign does not match' });
    const stale = await sendDingtalkCallback(url, HTTP_APP.clientSecret, message, { timestamp: Date.now() - 2 * 3_600_000 });
    assert.equal(stale.status, 401);
    assert.match(JSON.stringify(await stale.json()), /more than an hour off/);
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(message) });
    assert.equal(unsigned.status, 401);
    const notJson = await sendDingtalkCallback(url, HTTP_APP.clientSecret, '{"msgId": ');
    assert.equal(notJson.status, 400);
    assert.match(JSON.stringify(await notJson.json()), /not JSON/);
    const noConversation = await sendDingtalkCallback(url, HTTP_APP.clientSecret, { ...message, conversationType: undefined });
    assert.equal(noConversation.status, 400);
    assert.match(JSON.stringify(await noConversation.json()), /conversationType/);
    const toStreamBot = await sendDingtalkCallback(`${sys.services.get('ingress').url}/bots/${streamBot}`, STREAM_APP.clientSecret, message);
    assert.equal(toStreamBot.status, 403);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
    assert.equal(dingtalk.shown.filter((m) => m.to === user).length, 0);
  });

  test('HTTP mode: a captured timestamp and sign carry no other body, on this replica or another', async () => {
    const user = staff();
    const timestamp = Date.now();
    const genuine = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'the genuine one' });
    assert.equal((await sendDingtalkCallback(url, HTTP_APP.clientSecret, genuine, { timestamp })).status, 200);
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: the genuine one'), 60_000);
    const before = await lastQuerySeq();
    // The attacker saw the headers (a proxy log, say) and sends them with a body of their own.
    const forged = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'forged with a captured pair' });
    const replay = await sendDingtalkCallback(url, HTTP_APP.clientSecret, forged, { timestamp });
    assert.equal(replay.status, 401);
    assert.deepEqual(await replay.json(), { errcode: 401, errmsg: 'invalid signature: this timestamp and sign were already used' });
    // The claim lives in Redis: a second ingress replica refuses the pair too.
    const other = await sys.services.start('ingress', {}, `ingress-${uniqueName('r')}`);
    try {
      const elsewhere = await sendDingtalkCallback(`${other.url}/bots/${httpBot}`, HTTP_APP.clientSecret, forged, { timestamp });
      assert.equal(elsewhere.status, 401);
      // A fresh pair, as DingTalk signs each callback, is taken there.
      const next = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'signed afresh' });
      assert.equal((await sendDingtalkCallback(`${other.url}/bots/${httpBot}`, HTTP_APP.clientSecret, next)).status, 200);
      await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: signed afresh'), 60_000);
    } finally {
      await sys.services.kill(other.instance, 'SIGTERM');
    }
    assert.equal(await lastQuerySeq(), before + 1, 'only the freshly signed message was published');
    assert.equal(dingtalk.shown.filter((m) => m.to === user && m.text.includes('forged')).length, 0);
    const key = `${sys.prefix}:webhook-once:{${httpBot}}:dingtalk:${timestamp}:`;
    const ttl = await withRedis(async (r) => {
      const claims = await r.keys(`${key}*`);
      if (claims.length !== 1) return -3;
      const left = await r.pttl(claims[0]);
      await r.del(claims[0]);
      return left;
    });
    assert.ok(ttl > 3_500_000 && ttl <= 3_660_000, `the claim expires with the pair's validity (${ttl} ms)`);
  });

  test('Stream mode: a CALLBACK frame is acknowledged and answered; the same message delivered again is answered once; a ping is echoed', async () => {
    const subscriptions = dingtalk.stream.get(STREAM_APP.clientId)!.subscriptions;
    assert.deepEqual(subscriptions, [{ type: 'CALLBACK', topic: '/v1.0/im/bot/messages/get' }]);
    const user = staff();
    const message = dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'hello over stream' });
    const frameId = dingtalk.sendCallback(STREAM_APP.clientId, message);
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: hello over stream'), 60_000);
    await dingtalk.waitForStream((f) => f.acks.has(frameId), 30_000);
    assert.deepEqual(dingtalk.acks.get(frameId), { code: 200, headers: { contentType: 'application/json', messageId: frameId }, message: 'OK', data: '{"response":null}' });
    assert.equal(dingtalk.shown.find((m) => m.to === user)!.msgtype, 'markdown', 'markdown_card is on by default');

    // DingTalk delivers a message again when its ack was late: a new frame, the same msgId.
    const again = dingtalk.sendCallback(STREAM_APP.clientId, message);
    await dingtalk.waitForStream((f) => f.acks.has(again), 30_000);
    dingtalk.sendCallback(STREAM_APP.clientId, dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'next one' }));
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: next one'), 60_000);
    assert.equal(dingtalk.shown.filter((m) => m.text === 'Echo: hello over stream').length, 1, 'answered once');

    // A picture's download code is exchanged for its URL before the message is published.
    const code = `dc-${randomUUID()}`;
    dingtalk.sendCallback(STREAM_APP.clientId, dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'what is this', pictureCode: code }));
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text.startsWith('Echo: what is this')), 60_000);
    assert.deepEqual(dingtalk.downloads.filter((d) => d.downloadCode === code), [{ downloadCode: code, robotCode: 'dingrobot' }]);

    const ping = dingtalk.ping(STREAM_APP.clientId);
    await dingtalk.waitForStream((f) => f.pongs.has(ping), 30_000);
    assert.equal(dingtalk.pongs.get(ping)!.data, JSON.stringify({ opaque: ping }));
  });

  test('Stream mode: a disconnect ends the connection and the gateway opens a new one, one at a time; malformed frames are counted and skipped', async () => {
    const opened = dingtalk.stream.get(STREAM_APP.clientId)!.opened;
    dingtalk.disconnect(STREAM_APP.clientId);
    await dingtalk.waitForStream((f) => f.stream.get(STREAM_APP.clientId)!.opened > opened && f.stream.get(STREAM_APP.clientId)!.open === 1, 60_000);
    assert.equal(dingtalk.stream.get(STREAM_APP.clientId)!.maxOpen, 1, 'never two connections of one app');
    const user = staff();
    const garbage = dingtalk.sendCallback(STREAM_APP.clientId, { msgtype: 'text', text: { content: 'no ids' } });
    await dingtalk.waitForStream((f) => f.acks.has(garbage), 30_000);
    await waitUntil('the malformed message logged', () => sys.services.allLogs().includes('robot message: msgId'), 30_000);
    dingtalk.sendCallback(STREAM_APP.clientId, dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'after reconnecting' }));
    await dingtalk.waitFor((s) => s.some((m) => m.to === user && m.text === 'Echo: after reconnecting'), 60_000);

    // Wrong credentials: DingTalk refuses to open the connection; logged with the bot id, retried with backoff.
    const wrongSecret = `wrong-secret-${randomUUID()}`;
    const wrong = await addBot(sys, 'DingTalk (wrong secret)', 'dingtalk', { client_id: STREAM_APP.clientId, client_secret: wrongSecret, api_base_url: dingtalk.apiBaseUrl });
    await waitUntil('the refusal logged with the bot id', () => sys.services.allLogs().split('\n').some((l) => l.includes('platform connection failed') && l.includes(wrong) && l.includes('Forbidden.AccessDenied')), 60_000);
    assert.equal(dingtalk.stream.get(STREAM_APP.clientId)!.open, 1, 'the refused bot opened nothing');
    for (const secret of [HTTP_APP.clientSecret, STREAM_APP.clientSecret, CARD_APP.clientSecret, wrongSecret]) assert.ok(!sys.services.allLogs().includes(secret), 'secrets never reach the logs');
    assert.ok(!sys.services.allLogs().includes('sendBySession?session='), 'session webhooks never reach the logs');
  });

  test('Stream mode with enable-stream-reply and a card template: the answer streams into one AI card, finalized with the whole text', async () => {
    const user = staff();
    dingtalk.sendCallback(CARD_APP.clientId, dingtalk.robotMessage({ conversationType: '1', senderStaffId: user, text: 'stream please' }));
    const space = `dtv1.card//IM_ROBOT.${user}`;
    await dingtalk.waitFor((s) => s.some((m) => m.to === space && m.finalized === true), 60_000);
    const cards = dingtalk.shown.filter((m) => m.to === space);
    assert.equal(cards.length, 1, 'one card');
    assert.equal(cards[0]!.text, STREAMED);
    assert.ok(cards[0]!.updates!.length >= 2, `updated as the answer grew: ${cards[0]!.updates!.length} updates`);
    assert.ok(cards[0]!.updates![0]!.length < STREAMED.length, 'the first update is a snapshot, not the whole text');
  });
});
