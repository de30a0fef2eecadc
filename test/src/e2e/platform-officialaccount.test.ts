import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { newEncodingAesKey, readWechatPassiveReply, sendWechatMessage, sendWechatUrlCheck, startFakeWechatMp, wechatOpenId, wechatTextXml, type FakeWechatMp, type WechatMpCredentials } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';

const msgId = () => String(BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000)));

/**
 * A WeChat Official Account through all four services at `/bots/{bot_id}`, against the fake WeChat
 * API: the URL check; a quick reply as the callback's own (passive) answer, plain and in safe mode;
 * a slow reply answered `success` (drop mode) or LoadingMessage (passive mode) within WeChat's 5 s
 * and then sent through `message/custom/send`; a long reply split at 2,048 bytes with an expired
 * token replaced; refused callbacks that publish nothing.
 */
describe('WeChat Official Account at /bots/{bot_id}', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let wechat: FakeWechatMp;
  let url: string;
  let passiveUrl: string;
  const appId = `wx${uniqueName('app').replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 20);
  const secret = uniqueName('app-secret');
  const creds: WechatMpCredentials = { token: uniqueName('cb-token').replace(/[^A-Za-z0-9]/g, ''), encodingAesKey: newEncodingAesKey(), appId, accountId: 'gh_0123456789ab' };
  const botId = randomUUID();
  const passiveBotId = randomUUID();

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const text = (from: string, content: string, id = msgId()) => wechatTextXml({ accountId: creds.accountId, from, msgId: id, content });

  before(async () => {
    sys = await startTestSystem();
    nc = await connect({ servers: NATS_URL });
    wechat = await startFakeWechatMp({ appId, secret });
    const config = { token: creds.token, EncodingAESKey: creds.encodingAesKey, AppSecret: secret, AppID: appId, api_base_url: wechat.apiBaseUrl };
    await addBot(sys, 'Official Account', 'officialaccount', config, botId);
    await addBot(sys, 'Official Account (passive)', 'officialaccount', { ...config, Mode: 'passive', LoadingMessage: '正在思考，请稍候' }, passiveBotId);
    url = `${sys.services.get('ingress').url}/bots/${botId}`;
    passiveUrl = `${sys.services.get('ingress').url}/bots/${passiveBotId}`;
  });

  after(async () => {
    await nc?.close();
    await wechat?.close();
    await sys?.stop();
  });

  test('the URL check: the signed echostr is returned as it came; a forged one is 401', async () => {
    const res = await sendWechatUrlCheck(url, creds, '5837397520216107329');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '5837397520216107329');
    const forged = await sendWechatUrlCheck(url, creds, '42', { signature: 'f'.repeat(40) });
    assert.equal(forged.status, 401);
  });

  test('a reply ready within the window is the passive reply, plain and in safe mode; nothing goes through the API', async () => {
    for (const encrypted of [false, true]) {
      const answer = `passive answer ${uniqueName('p')} ]]> <b>&`;
      sys.llm.setDefault({ text: answer });
      const user = wechatOpenId();
      const started = Date.now();
      const { res } = await sendWechatMessage(url, creds, text(user, 'hello'), { encrypted });
      const took = Date.now() - started;
      assert.equal(res.status, 200);
      const reply = readWechatPassiveReply(await res.text(), creds);
      assert.ok(took < 5_000, `answered within WeChat's 5 s (${took} ms)`);
      assert.deepEqual(reply, { ToUserName: user, FromUserName: creds.accountId, CreateTime: reply?.['CreateTime'] ?? '', MsgType: 'text', Content: answer }, `encrypted: ${encrypted}`);
      assert.match(reply?.['CreateTime'] ?? '', /^\d{10}$/);
      assert.equal(wechat.delivered.filter((d) => d.touser === user).length, 0);
    }
  });

  test('a slow reply: drop mode answers "success" in time, passive mode LoadingMessage; the reply then comes through custom/send', async () => {
    for (const [target, expectLoading] of [[url, false], [passiveUrl, true]] as const) {
      const answer = `slow answer ${uniqueName('s')}`;
      sys.llm.setDefault({ text: answer, delayFirstTokenMs: 6_000 });
      const user = wechatOpenId();
      const started = Date.now();
      const { res } = await sendWechatMessage(target, creds, text(user, 'think hard'), { encrypted: expectLoading });
      const body = await res.text();
      const took = Date.now() - started;
      assert.equal(res.status, 200);
      assert.ok(took < 5_000 && took >= 3_000, `held for the window, answered before WeChat gives up (${took} ms)`);
      if (expectLoading) assert.equal(readWechatPassiveReply(body, creds)?.['Content'], '正在思考，请稍候');
      else assert.equal(body, 'success');
      await wechat.waitFor((d) => d.some((m) => m.touser === user && m.content === answer), 30_000);
      assert.equal(wechat.delivered.filter((d) => d.touser === user).length, 1);
    }
  });

  test('a long reply lets the call go at once and is split at 2,048 bytes; an expired token is replaced', async () => {
    const answer = Array.from({ length: 60 }, (_, i) => `第${i}行：${'长文本'.repeat(20)}`).join('\n');
    sys.llm.setDefault({ text: answer });
    wechat.expireTokens();
    const issuedBefore = wechat.tokensIssued();
    const user = wechatOpenId();
    const started = Date.now();
    const { res } = await sendWechatMessage(url, creds, text(user, 'tell me a lot'));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'success');
    assert.ok(Date.now() - started < 3_900, 'answered when the reply came, not at the end of the 4 s window');
    const joined = () => wechat.delivered.filter((m) => m.touser === user).map((m) => m.content).join('');
    await wechat.waitFor(() => joined() === answer, 30_000);
    const parts = wechat.delivered.filter((m) => m.touser === user);
    assert.ok(parts.length >= Math.ceil(Buffer.byteLength(answer) / 2048), `${parts.length} parts`);
    for (const p of parts) assert.ok(Buffer.byteLength(p.content) <= 2048);
    assert.ok(wechat.tokensIssued() > issuedBefore, 'a new access token after errcode 42001');
  });

  test('refused before parsing: bad signatures 401, another AppID or key 400, a replayed or stale query; nothing is published', async () => {
    const before = await lastQuerySeq();
    const user = wechatOpenId();
    const forged = await sendWechatMessage(url, creds, text(user, 'forged'), { signature: '0'.repeat(40) });
    assert.equal(forged.res.status, 401);
    assert.equal(await forged.res.text(), 'invalid signature');
    const forgedSafe = await sendWechatMessage(url, creds, text(user, 'forged'), { encrypted: true, signature: '0'.repeat(40) });
    assert.equal(forgedSafe.res.status, 401);
    const otherToken = await sendWechatMessage(url, { ...creds, token: 'not-the-token' }, text(user, 'forged'));
    assert.equal(otherToken.res.status, 401);
    const stale = await sendWechatMessage(url, creds, text(user, 'old'), { timestamp: String(Math.floor(Date.now() / 1000) - 3600) });
    assert.equal(stale.res.status, 401);
    assert.match(await stale.res.text(), /timestamp/);
    const otherApp = await sendWechatMessage(url, creds, text(user, 'x'), { encrypted: true, receiverId: 'wx-another-app' });
    assert.equal(otherApp.res.status, 400);
    assert.equal(await otherApp.res.text(), 'bad AppID: the message is encrypted for another AppID');
    const otherKey = await sendWechatMessage(url, { ...creds, encodingAesKey: newEncodingAesKey() }, text(user, 'x'), { encrypted: true });
    assert.equal(otherKey.res.status, 400);
    assert.match(await otherKey.res.text(), /^undecryptable message: /);
    const notXml = await sendWechatMessage(url, creds, '<xml><MsgType>text</MsgType><Content>unclosed');
    assert.equal(notXml.res.status, 400);
    assert.match(await notXml.res.text(), /^malformed message: /);
    const noSender = await sendWechatMessage(url, creds, text(user, 'x').replace(/<FromUserName>.*<\/FromUserName>/, ''));
    assert.equal(noSender.res.status, 400);
    assert.match(await noSender.res.text(), /FromUserName/);
    // An event (a follower subscribing) is taken with "success" and makes no query; its signed
    // query, presented again with another body, is refused as a replay (plain mode signs no body).
    const event = await sendWechatMessage(url, creds, `<xml><ToUserName><![CDATA[${creds.accountId}]]></ToUserName><FromUserName><![CDATA[${user}]]></FromUserName><CreateTime>1</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[subscribe]]></Event></xml>`);
    assert.equal(event.res.status, 200);
    assert.equal(await event.res.text(), 'success');
    const replay = await sendWechatMessage(url, creds, text(user, 'smuggled'), { query: event.query });
    assert.equal(replay.res.status, 200);
    assert.equal(await replay.res.text(), 'success');
    assert.equal(await lastQuerySeq(), before, 'no query was published');
    assert.equal(wechat.delivered.filter((m) => m.touser === user).length, 0);
  });
});
