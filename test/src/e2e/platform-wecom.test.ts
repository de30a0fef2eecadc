import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { newEncodingAesKey, sendWecomCallback, sendWecomUrlCheck, startFakeWecom, wecomMsgId, wecomTextXml, type FakeWecom, type WecomCallbackCredentials } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';


/**
 * A WeCom self-built app through all four services at `/bots/{bot_id}`, against the fake WeCom API:
 * the URL check, an encrypted text message answered through `message/send` once though WeCom sends
 * the callback again, a long answer split at WeCom's 2,048-byte limit, an expired access token
 * replaced, and refused callbacks (signature, corp id, ciphertext, XML) that publish nothing.
 */
describe('WeCom app callback at /bots/{bot_id}', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let wecom: FakeWecom;
  let url: string;
  const corpId = `ww${uniqueName('corp').replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 30);
  const secret = uniqueName('wecom-secret');
  const creds: WecomCallbackCredentials = { token: uniqueName('cb-token'), encodingAesKey: newEncodingAesKey(), corpId };
  const botId = randomUUID();
  const agentId = 1000002;

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const member = () => uniqueName('member').replace(/[^\w.@-]/g, '_');
  const text = (from: string, content: string, msgId = wecomMsgId()) => wecomTextXml({ corpId, from, agentId, msgId, content });

  before(async () => {
    sys = await startTestSystem();
    nc = await connect({ servers: NATS_URL });
    wecom = await startFakeWecom({ corpId, secret });
    await addBot(sys, 'WeCom bot', 'wecom', { corpid: corpId, secret, token: creds.token, EncodingAESKey: creds.encodingAesKey, api_base_url: wecom.apiBaseUrl }, botId);
    url = `${sys.services.get('ingress').url}/bots/${botId}`;
  });

  after(async () => {
    await nc?.close();
    await wecom?.close();
    await sys?.stop();
  });

  test('the URL check: the signed echostr is decrypted and returned as plain text', async () => {
    const res = await sendWecomUrlCheck(url, creds, '1616140317555161061');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(await res.text(), '1616140317555161061');
    const forged = await sendWecomUrlCheck(url, creds, '42', { signature: 'f'.repeat(40) });
    assert.equal(forged.status, 401);
  });

  test('a text message is answered through message/send once, though WeCom sends the callback again', async () => {
    const answer = `WeCom answer ${uniqueName('a')}`;
    sys.llm.setDefault({ text: answer });
    const user = member();
    const xml = text(user, 'hello');
    const first = await sendWecomCallback(url, creds, xml, { agentId });
    assert.equal(first.status, 200);
    assert.equal(await first.text(), '', 'an empty 200: the answer goes out through the API');
    // WeCom's retry of the same message (no answer within 5 s): same MsgId, new nonce and ciphertext.
    const retry = await sendWecomCallback(url, creds, xml, { agentId });
    assert.equal(retry.status, 200);
    await wecom.waitFor((d) => d.some((m) => m.touser === user && m.content === answer), 30_000);
    // A later message of the same member is answered too; by then the retry would have been.
    const next = `WeCom second ${uniqueName('b')}`;
    sys.llm.setDefault({ text: next });
    assert.equal((await sendWecomCallback(url, creds, text(user, 'and again'))).status, 200);
    await wecom.waitFor((d) => d.some((m) => m.touser === user && m.content === next), 30_000);
    const mine = wecom.delivered.filter((m) => m.touser === user);
    assert.deepEqual(mine.map((m) => m.content), [answer, next], 'one message per question, the retried callback answered once');
    assert.ok(mine.every((m) => m.agentid === agentId), 'sent through the agent the member wrote to');
  });

  test('a long answer is split into messages of at most 2,048 bytes, in order; an expired token is replaced', async () => {
    // Three-byte characters and line breaks: pieces must end on a character, preferably after a line.
    const answer = Array.from({ length: 60 }, (_, i) => `第${i}行：${'长文本'.repeat(20)}`).join('\n');
    sys.llm.setDefault({ text: answer });
    wecom.expireTokens();
    const issuedBefore = wecom.tokensIssued();
    const user = member();
    assert.equal((await sendWecomCallback(url, creds, text(user, 'tell me a lot'))).status, 200);
    const joined = () => wecom.delivered.filter((m) => m.touser === user).map((m) => m.content).join('');
    await wecom.waitFor(() => joined() === answer, 30_000);
    const parts = wecom.delivered.filter((m) => m.touser === user);
    assert.ok(parts.length >= Math.ceil(Buffer.byteLength(answer) / 2048), `${parts.length} parts`);
    for (const p of parts) assert.ok(Buffer.byteLength(p.content) <= 2048, `${Buffer.byteLength(p.content)} bytes`);
    assert.ok(parts.slice(0, -1).every((p) => p.content.endsWith('\n')), 'each piece but the last ends after a line');
    assert.ok(wecom.tokensIssued() > issuedBefore, 'a new access token after errcode 42001');
  });

  test('a bad signature is 401; another corp id, an undecryptable ciphertext or bad XML is 400 with the reason; nothing is published', async () => {
    const before = await lastQuerySeq();
    const user = member();
    const forged = await sendWecomCallback(url, creds, text(user, 'forged'), { signature: '0'.repeat(40) });
    assert.equal(forged.status, 401);
    assert.equal(await forged.text(), 'invalid signature');
    const otherToken = await sendWecomCallback(url, { ...creds, token: 'not-the-token' }, text(user, 'forged'));
    assert.equal(otherToken.status, 401);
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: '<xml><Encrypt>AAAA</Encrypt></xml>' });
    assert.equal(unsigned.status, 401);
    const otherCorp = await sendWecomCallback(url, creds, text(user, 'x'), { receiverId: 'ww-another-corp' });
    assert.equal(otherCorp.status, 400);
    assert.equal(await otherCorp.text(), 'bad corp id: the message is encrypted for another corp id');
    const otherKey = await sendWecomCallback(url, { ...creds, encodingAesKey: newEncodingAesKey() }, text(user, 'x'));
    assert.equal(otherKey.status, 400);
    assert.match(await otherKey.text(), /^undecryptable message: /);
    const garbage = await sendWecomCallback(url, creds, '', { encrypted: Buffer.alloc(48, 7).toString('base64') });
    assert.equal(garbage.status, 400);
    assert.match(await garbage.text(), /^undecryptable message: /);
    const notXml = await sendWecomCallback(url, creds, '<xml><MsgType>text</MsgType><Content>unclosed');
    assert.equal(notXml.status, 400);
    assert.match(await notXml.text(), /^malformed message: /);
    const noSender = await sendWecomCallback(url, creds, text(user, 'x').replace(/<FromUserName>.*<\/FromUserName>/, ''));
    assert.equal(noSender.status, 400);
    assert.match(await noSender.text(), /FromUserName/);
    const noEncrypt = await fetch(`${url}?msg_signature=${'a'.repeat(40)}&timestamp=1&nonce=2`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: '<xml><ToUserName>x</ToUserName></xml>' });
    assert.equal(noEncrypt.status, 400);
    assert.match(await noEncrypt.text(), /Encrypt/);
    const noNonce = await fetch(`${url}?msg_signature=${'a'.repeat(40)}&timestamp=1`, { method: 'POST', body: '<xml/>' });
    assert.equal(noNonce.status, 400);
    assert.match(await noNonce.text(), /nonce/);
    // An event (a member opening the app) is acknowledged and makes no query.
    const event = await sendWecomCallback(url, creds, `<xml><ToUserName><![CDATA[${corpId}]]></ToUserName><FromUserName><![CDATA[${user}]]></FromUserName><CreateTime>1</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[enter_agent]]></Event><AgentID>${agentId}</AgentID></xml>`);
    assert.equal(event.status, 200);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
    assert.equal(wecom.delivered.filter((m) => m.touser === user).length, 0);
  });
});
