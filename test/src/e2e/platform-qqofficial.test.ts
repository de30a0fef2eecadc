import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, randomUUID, verify } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import { redisKeys } from '@conveyor/contracts';
import { addBot, NATS_URL, REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { sendQqWebhook, startFakeQq, type FakeQq, type QqApp } from '../fakes/index.js';
import { gatewayHolder, gatewayLogs } from '../harness/gateway.js';
import { waitUntil } from '../harness/wait.js';

const HOOK_APP: QqApp = { appid: '102000101', secret: `hook-secret-${randomUUID()}` };
const WS_APP: QqApp = { appid: '102000202', secret: `ws-secret-${randomUUID()}` };
const LEASE_TTL_MS = 3_000;

/** The public key QQ's validation answer must verify under: the app secret's seed, derived here on its own. */
function publicKeyOf(secret: string) {
  let seed = Buffer.from(secret);
  while (seed.length < 32) seed = Buffer.concat([seed, seed]);
  return createPublicKey(createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed.subarray(0, 32)]), format: 'der', type: 'pkcs8' }));
}

/**
 * QQ Official through all services against the fake QQ: signed webhook calls at `/bots/{bot_id}`
 * (URL validation, group @ and private messages answered as passive replies with msg_id and msg_seq,
 * forged and malformed calls refused publishing nothing, one access token for every reply), and a
 * WebSocket bot held by two gateway replicas (channel @ messages, a takeover after SIGKILL of the
 * holder resuming the session).
 */
describe('QQ Official: webhook at /bots/{bot_id} and the WebSocket gateway', () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let qq: FakeQq;
  let url: string;
  let wsBot: string;
  const lastQuerySeq = async () => (await (await jetstreamManager(nc)).streams.info(sys.topology.streams.queries.name)).state.last_seq;
  const failureLogs = () => sys.services.allLogs().split('\n').filter((l) => /"level":[45]0/.test(l)).slice(-30).join('\n');
  const repliesTo = (kind: string, target: string, text: string) => qq.shown().filter((m) => m.kind === kind && m.targetId === target && m.content === text);

  before(async () => {
    sys = await startTestSystem();
    nc = await connect({ servers: NATS_URL });
    qq = await startFakeQq({ apps: [HOOK_APP, WS_APP] });
    const hookBot = await addBot(sys, 'QQ (webhook)', 'qqofficial', { appid: HOOK_APP.appid, secret: HOOK_APP.secret, token: 'legacy-token', api_base_url: qq.apiBase, auth_url: qq.authUrl });
    wsBot = await addBot(sys, 'QQ (WebSocket)', 'qqofficial', { appid: WS_APP.appid, secret: WS_APP.secret, 'enable-webhook': false, api_base_url: qq.apiBase, auth_url: qq.authUrl });
    url = `${sys.services.get('ingress').url}/bots/${hookBot}`;
    const env = { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) };
    await Promise.all([sys.services.start('gateway', env, 'gateway-1'), sys.services.start('gateway', env, 'gateway-2')]);
    await qq.waitForGateway((g) => g.byApp.get(WS_APP.appid)?.open === 1, 60_000);
  });

  after(async () => {
    await nc?.close();
    await sys?.stop();
    await qq?.close();
  });

  test('the callback URL validation (op 13) is answered with the plain_token signed under the app secret', async () => {
    const res = await sendQqWebhook(url, HOOK_APP, { op: 13, d: { plain_token: 'Arq0D5A61EgUu4OxUvOp', event_ts: '1725442341' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.plain_token, 'Arq0D5A61EgUu4OxUvOp');
    assert.ok(verify(null, Buffer.from('1725442341Arq0D5A61EgUu4OxUvOp'), publicKeyOf(HOOK_APP.secret), Buffer.from(res.body.signature, 'hex')), 'the signature verifies');
  });

  test('a group @ message and a private one are answered as passive replies; two replies to one message get msg_seq 1 and 2; one access token for all', async () => {
    const group = { op: 0, id: `GROUP_AT_MESSAGE_CREATE:${randomUUID()}`, t: 'GROUP_AT_MESSAGE_CREATE', d: { id: 'ROBOT1.0_group-1', content: ' hello group', timestamp: new Date().toISOString(), group_openid: 'GROUPOPEN1', author: { member_openid: 'MEMBER1' } } };
    const res = await sendQqWebhook(url, HOOK_APP, group);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { op: 12 });
    await qq.waitFor(() => repliesTo('group', 'GROUPOPEN1', 'Echo: hello group').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    const [reply] = repliesTo('group', 'GROUPOPEN1', 'Echo: hello group');
    assert.equal(reply.msgId, 'ROBOT1.0_group-1');
    assert.equal(reply.msgSeq, 1);
    // QQ retries a call it got no answer to: the same message is one query, answered once.
    assert.equal((await sendQqWebhook(url, HOOK_APP, group)).status, 200);
    const c2c = { op: 0, t: 'C2C_MESSAGE_CREATE', d: { id: 'ROBOT1.0_c2c-1', content: 'hello me', timestamp: new Date().toISOString(), author: { user_openid: 'USEROPEN1' } } };
    assert.equal((await sendQqWebhook(url, HOOK_APP, c2c)).status, 200);
    await qq.waitFor(() => repliesTo('c2c', 'USEROPEN1', 'Echo: hello me').length === 1, 60_000);
    assert.equal(repliesTo('c2c', 'USEROPEN1', 'Echo: hello me')[0].msgId, 'ROBOT1.0_c2c-1');
    assert.equal(repliesTo('group', 'GROUPOPEN1', 'Echo: hello group').length, 1, 'the retried delivery was not answered again');
    // A second reply to the same message (as a plugin may send) takes the next msg_seq, from Redis.
    const redis = new Redis(REDIS_URL);
    try {
      assert.equal(await redis.get(redisKeys(sys.topology.prefix).qqMsgSeq(url.split('/').at(-1)!, 'ROBOT1.0_group-1')), '1');
    } finally {
      redis.disconnect();
    }
    assert.equal(qq.tokenFetches.get(HOOK_APP.appid), 1, 'the access token was fetched once and shared');
  });

  test('forged, unsigned and malformed calls are refused and publish nothing', async () => {
    const before = await lastQuerySeq();
    const message = { op: 0, t: 'C2C_MESSAGE_CREATE', d: { id: 'ROBOT1.0_forged', content: 'forged', author: { user_openid: 'USEROPEN2' } } };
    const forged = await sendQqWebhook(url, HOOK_APP, message, { signWith: 'not-the-secret' });
    assert.equal(forged.status, 401);
    assert.match(JSON.stringify(forged.body), /bad signature/);
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(message) });
    assert.equal(unsigned.status, 401);
    assert.equal((await sendQqWebhook(url, HOOK_APP, '{not json')).status, 400);
    const noIds = await sendQqWebhook(url, HOOK_APP, { op: 0, t: 'GROUP_AT_MESSAGE_CREATE', d: { content: 'who am i' } });
    assert.equal(noIds.status, 400);
    assert.match(JSON.stringify(noIds.body), /GROUP_AT_MESSAGE_CREATE/);
    assert.equal((await sendQqWebhook(`${sys.services.get('ingress').url}/bots/${wsBot}`, WS_APP, message)).status, 403, 'a WebSocket bot takes no webhook');
    assert.equal(await lastQuerySeq(), before, 'no query was published');
    assert.ok(!sys.services.allLogs().includes(HOOK_APP.secret), 'the secret never reaches the logs');
  });

  test('WebSocket: a channel @ is answered in the channel; SIGKILL of the holder, the other replica resumes and answers what came meanwhile once', async () => {
    const at = (id: string, text: string) => ({ id, channel_id: 'CHANNEL1', guild_id: 'GUILD1', content: `<@!bot-${WS_APP.appid}> ${text}`, timestamp: new Date().toISOString(), author: { id: 'USER9', username: 'alice' }, mentions: [{ id: `bot-${WS_APP.appid}`, username: 'conveyor-bot', bot: true }] });
    qq.emitEvent(WS_APP.appid, 'AT_MESSAGE_CREATE', at('CH-1', 'hi channel'));
    await qq.waitFor(() => qq.shown().some((m) => m.kind === 'channel' && m.targetId === 'CHANNEL1' && m.content.endsWith('Echo: hi channel')), 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    const shownIn = (text: string) => qq.shown().filter((m) => m.kind === 'channel' && m.content.endsWith(`Echo: ${text}`));
    assert.equal(shownIn('hi channel')[0].msgId, 'CH-1');
    assert.equal(shownIn('hi channel')[0].content, '<@USER9>Echo: hi channel', 'the group reply mentions its asker first');
    const owner = await waitUntil('the holder of the bot', () => gatewayHolder(sys.services, wsBot), 30_000);
    const before = { ...qq.gateway.byApp.get(WS_APP.appid)! };
    const session = qq.latestSession(WS_APP.appid);
    await sys.services.kill(owner, 'SIGKILL');
    await qq.waitForGateway((g) => g.byApp.get(WS_APP.appid)?.open === 0, 30_000);
    qq.emitEvent(WS_APP.appid, 'AT_MESSAGE_CREATE', at('CH-2', 'while nobody held the bot'));
    await qq.waitForGateway((g) => {
      const s = g.byApp.get(WS_APP.appid);
      return s !== undefined && s.open === 1 && s.identifies + s.resumes > before.identifies + before.resumes;
    }, 60_000);
    const after = qq.gateway.byApp.get(WS_APP.appid)!;
    assert.equal(after.identifies, before.identifies, 'resumed instead of identifying anew');
    assert.equal(after.lastResumed, session);
    await qq.waitFor(() => shownIn('while nobody held the bot').length === 1, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${gatewayLogs(sys.services).filter((l) => /"level":[45]0|QQ/.test(l)).slice(-30).join('\n')}`);
    });
    qq.emitEvent(WS_APP.appid, 'AT_MESSAGE_CREATE', at('CH-3', 'after the takeover'));
    await qq.waitFor(() => shownIn('after the takeover').length === 1, 60_000);
    assert.equal(shownIn('while nobody held the bot').length, 1, 'answered once');
    assert.equal(qq.gateway.byApp.get(WS_APP.appid)?.maxOpen, 1, 'never two connections of one bot');
    assert.ok(!gatewayLogs(sys.services).some((l) => l.includes(WS_APP.secret) || l.includes('qq-access-')), 'no secret or access token in the logs');
  });
});
