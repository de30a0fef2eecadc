import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addBot, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { newEncodingAesKey, sendWecomCallback, sendWecomUrlCheck, startFakeWecom, wecomKfEventXml, type FakeWecom, type WecomCallbackCredentials } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';


/**
 * WeCom customer service (微信客服) through all four services at `/bots/{bot_id}`, against the fake
 * WeCom API: a `kf_msg_or_event` callback makes the ingress pull the account's messages with
 * `kf/sync_msg` (its cursor kept in Redis, so the next callback goes on from there), each customer
 * text is answered once through `kf/send_msg`; refused callbacks publish nothing.
 */
describe('WeCom customer service at /bots/{bot_id}', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let wecom: FakeWecom;
  let url: string;
  const corpId = `ww${uniqueName('kfcorp').replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 30);
  const secret = uniqueName('kf-secret');
  const creds: WecomCallbackCredentials = { token: uniqueName('kf-token'), encodingAesKey: newEncodingAesKey(), corpId };
  const botId = randomUUID();
  const account = () => `wk${uniqueName('kf').replace(/[^\w]/g, '')}`.slice(0, 40);
  const customer = () => `wm${uniqueName('cust').replace(/[^\w]/g, '')}`;

  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const announce = (token: string, openKfId: string) => sendWecomCallback(url, creds, wecomKfEventXml({ corpId, token, openKfId }));

  before(async () => {
    sys = await startTestSystem({ modelAbilities: ['func_call', 'vision'] });
    nc = await connect({ servers: NATS_URL });
    wecom = await startFakeWecom({ corpId, secret });
    await addBot(sys, 'WeCom customer service', 'wecomcs', { corpid: corpId, secret, token: creds.token, EncodingAESKey: creds.encodingAesKey, api_base_url: wecom.apiBaseUrl }, botId);
    url = `${sys.services.get('ingress').url}/bots/${botId}`;
  });

  after(async () => {
    await nc?.close();
    await wecom?.close();
    await sys?.stop();
  });

  test('the URL check: the signed echostr is decrypted and returned', async () => {
    const res = await sendWecomUrlCheck(url, creds, '8712634501');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '8712634501');
  });

  test('an announced message is pulled and answered once through kf/send_msg; the cursor goes on from where it stood', async () => {
    const answer = `kf answer ${uniqueName('a')}`;
    sys.llm.setDefault({ text: answer });
    const kf = account();
    const alice = customer();
    const first = wecom.kfCustomerSays({ openKfId: kf, customer: alice, content: 'hello' });
    const res = await announce(first.token, kf);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '');
    await wecom.kfWaitFor((d) => d.some((m) => m.touser === alice && m.content === answer), 30_000);
    const cursorsBefore = wecom.kfSyncCursors.length;
    // Four more (more than one page of the fake's sync_msg), announced by one callback, then the
    // same callback again (WeCom's retry): each message answered once.
    const next = `kf second ${uniqueName('b')}`;
    sys.llm.setDefault({ text: next });
    const bob = customer();
    let last = { token: '', msgId: '' };
    for (let i = 0; i < 4; i++) last = wecom.kfCustomerSays({ openKfId: kf, customer: i % 2 ? bob : alice, content: `more ${i}` });
    assert.equal((await announce(last.token, kf)).status, 200);
    assert.equal((await announce(last.token, kf)).status, 200);
    await wecom.kfWaitFor((d) => d.filter((m) => m.content === next).length >= 4, 30_000);
    const newCursors = wecom.kfSyncCursors.slice(cursorsBefore);
    assert.ok(newCursors.length >= 2 && !newCursors.includes(''), `every later pull starts at the stored cursor (${newCursors.join(',')})`);
    assert.equal(newCursors[0], 'c1', 'the first later pull goes on after the first message');
    assert.deepEqual(wecom.kfDelivered.filter((m) => m.openKfId === kf).map((m) => m.touser).sort(), [alice, alice, alice, bob, bob].sort(), 'one answer per message, through the account they wrote to');
  });

  test('a customer\'s image is downloaded with the access token (media/get) and reaches the model inline; one too large becomes [Image]', async () => {
    const answer = `kf image ${uniqueName('i')}`;
    sys.llm.setDefault({ text: answer });
    const kf = account();
    const carol = customer();
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
    const before = sys.llm.requests.length;
    const sent = wecom.kfCustomerSendsImage({ openKfId: kf, customer: carol, bytes: png, contentType: 'image/png' });
    assert.equal((await announce(sent.token, kf)).status, 200);
    await wecom.kfWaitFor((d) => d.some((m) => m.touser === carol && m.content === answer), 30_000);
    assert.deepEqual(wecom.mediaDownloads.filter((id) => id === sent.mediaId), [sent.mediaId]);
    const user = sys.llm.requests.slice(before).map((r) => r.body.messages?.findLast((m: { role: string }) => m.role === 'user')).find((m) => JSON.stringify(m).includes('image_url'));
    assert.deepEqual(user?.content, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }]);

    const large = wecom.kfCustomerSendsImage({ openKfId: kf, customer: carol, bytes: Buffer.alloc(600 * 1024, 7), contentType: 'image/jpeg' });
    const seen = sys.llm.requests.length;
    assert.equal((await announce(large.token, kf)).status, 200);
    await wecom.kfWaitFor((d) => d.filter((m) => m.touser === carol && m.content === answer).length === 2, 30_000);
    const placeholder = sys.llm.requests.slice(seen).map((r) => r.body.messages?.findLast((m: { role: string }) => m.role === 'user')?.content);
    assert.ok(placeholder.some((c) => JSON.stringify(c).includes('[Image]')), `the model got [Image]: ${JSON.stringify(placeholder)}`);
    assert.ok(sys.services.allLogs().split('\n').some((l) => l.includes('an image was not downloaded') && l.includes(botId) && l.includes('over 524288')));
  });

  test('on an account\'s first pull old history is not answered; servicers\' messages never are', async () => {
    const answer = `kf fresh ${uniqueName('f')}`;
    sys.llm.setDefault({ text: answer });
    const kf = account();
    const old = customer();
    const fresh = customer();
    wecom.kfCustomerSays({ openKfId: kf, customer: old, content: 'yesterday', sendTime: Math.floor(Date.now() / 1000) - 86_400 });
    wecom.kfCustomerSays({ openKfId: kf, customer: fresh, content: 'from a servicer', origin: 5 });
    const { token } = wecom.kfCustomerSays({ openKfId: kf, customer: fresh, content: 'now' });
    assert.equal((await announce(token, kf)).status, 200);
    await wecom.kfWaitFor((d) => d.some((m) => m.touser === fresh && m.content === answer), 30_000);
    const before = await lastQuerySeq();
    // Nothing else is left to answer: a callback now publishes nothing.
    assert.equal((await announce(token, kf)).status, 200);
    assert.equal(await lastQuerySeq(), before);
    assert.equal(wecom.kfDelivered.filter((m) => m.openKfId === kf).length, 1);
    assert.equal(wecom.kfDelivered.filter((m) => m.touser === old).length, 0);
  });

  test('refused: bad signature 401, another corp 400, a malformed event 400, a token WeCom did not issue 500; nothing published', async () => {
    const before = await lastQuerySeq();
    const kf = account();
    const { token } = wecom.kfCustomerSays({ openKfId: kf, customer: customer(), content: 'forged' });
    const xml = wecomKfEventXml({ corpId, token, openKfId: kf });
    const forged = await sendWecomCallback(url, creds, xml, { signature: '0'.repeat(40) });
    assert.equal(forged.status, 401);
    const otherCorp = await sendWecomCallback(url, creds, xml, { receiverId: 'ww-another' });
    assert.equal(otherCorp.status, 400);
    const noKf = await sendWecomCallback(url, creds, xml.replace(/<OpenKfId>.*<\/OpenKfId>/, ''));
    assert.equal(noKf.status, 400);
    assert.match(await noKf.text(), /^malformed event: .*OpenKfId/);
    const badToken = await announce('not-a-token-wecom-issued', kf);
    assert.equal(badToken.status, 500, 'the pull failed; WeCom calls again');
    const other = await sendWecomCallback(url, creds, `<xml><ToUserName>${corpId}</ToUserName><MsgType>event</MsgType><Event>enter_session</Event></xml>`);
    assert.equal(other.status, 200);
    assert.equal(await lastQuerySeq(), before, 'no query was published');
  });
});
