import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeWecomBotWs, type FakeWecomBotWs } from '../fakes/wecom-bot-ws-server.js';
import { gatewayHolder, gatewayLogs as allGatewayLogs } from '../harness/gateway.js';
import { waitUntil } from '../harness/wait.js';

const AIBOT = 'aib-e2e-long-connection';
const SECRET = 'wecombot-e2e-secret-0123456789';
const WHOLE_AIBOT = 'aib-e2e-whole-replies';
const BAD_AIBOT = 'aib-e2e-wrong-secret';
const BAD_SECRET = 'wecombot-e2e-not-the-secret';
const LEASE_TTL_MS = 3_000;

/** The WeCom AI bot's long connection: the fake WeCom's WebSocket → two gateway replicas → pipeline → `aibot_respond_msg` back on the socket. */
describe('WeCom AI bot over the long connection', () => {
  let sys: TestSystem;
  let wecom: FakeWecomBotWs;
  let bot: string;
  let wholeBot: string;

  before(async () => {
    sys = await startTestSystem();
    wecom = await startFakeWecomBotWs({ bots: { [AIBOT]: SECRET, [WHOLE_AIBOT]: SECRET, [BAD_AIBOT]: 'the real secret' } });
    bot = await addBot(sys, 'WeCom AI bot (long connection)', 'wecombot', { BotId: AIBOT, Secret: SECRET, robot_name: 'Conveyor', ws_url: wecom.url, 'enable-webhook': false });
    wholeBot = await addBot(sys, 'WeCom AI bot (whole replies)', 'wecombot', { BotId: WHOLE_AIBOT, Secret: SECRET, ws_url: wecom.url, 'enable-stream-reply': false });
    const env = { GATEWAY_LEASE_TTL_MS: String(LEASE_TTL_MS) };
    await Promise.all([sys.services.start('gateway', env, 'gateway-1'), sys.services.start('gateway', env, 'gateway-2')]);
    await wecom.waitForConnections((c) => c.get(AIBOT)?.open === 1 && c.get(WHOLE_AIBOT)?.open === 1, 60_000);
  });

  after(async () => {
    await sys?.stop();
    await wecom?.close();
  });

  const gatewayLogs = () => allGatewayLogs(sys.services);
  const failureLogs = () => sys.services.allLogs().split('\n').filter((l) => /"level":[45]0/.test(l)).slice(-30).join('\n');
  const finished = (f: { body: Record<string, any> }) => f.body.msgtype === 'markdown' || f.body.stream?.finish === true;
  /** The frames answering the callback once the last of them (a whole reply, a finished stream) came. */
  const answerTo = async (reqId: string) => {
    await wecom.waitFor(() => wecom.repliesTo(reqId).some(finished), 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${failureLogs()}`);
    });
    return wecom.repliesTo(reqId);
  };
  const answerText = async (reqId: string) => {
    const last = (await answerTo(reqId)).find(finished)!;
    return last.body.msgtype === 'markdown' ? last.body.markdown.content : last.body.stream.content;
  };

  test('a single chat\'s text is streamed into one stream message under the callback\'s req_id; a group\'s mention in the group\'s session', async () => {
    // Paced and long enough for snapshots before the end (one every 8 deltas, as LangBot makes them).
    const answer = Array.from({ length: 24 }, (_, i) => `word${i}`).join(' ');
    sys.llm.script({ text: answer, tokensPerSecond: 40 });
    const asked = wecom.pushText(AIBOT, { userId: 'zhangsan', text: 'hello over the long connection' });
    const frames = await answerTo(asked.reqId);
    assert.ok(frames.every((f) => f.body.msgtype === 'stream'), 'streamed');
    assert.equal(new Set(frames.map((f) => f.body.stream.id)).size, 1, 'one stream');
    assert.ok(frames.length >= 2, `snapshots before the end: ${frames.length} frames`);
    const contents = frames.map((f) => String(f.body.stream.content));
    assert.ok(contents.every((c, i) => i === 0 || c.startsWith(contents[i - 1])), `each snapshot holds the one before: ${JSON.stringify(contents)}`);
    assert.deepEqual(frames.map((f) => f.body.stream.finish), [...frames.slice(1).map(() => false), true], 'finished by the last frame only');
    assert.equal(contents.at(-1), answer);
    const inGroup = wecom.pushText(AIBOT, { userId: 'lisi', chatId: 'wrGroup1', text: '@Conveyor what about the group' });
    assert.equal(await answerText(inGroup.reqId), 'Echo: what about the group', 'the mention is taken out of the text');
    const prisma = createPrismaClient(sys.db.url);
    try {
      const records = await prisma.queryRecord.findMany({ where: { botId: bot }, orderBy: { receivedAt: 'asc' } });
      assert.deepEqual(records.map((r) => `${r.launcherType}:${r.launcherId}`), ['person:zhangsan', 'group:wrGroup1']);
    } finally {
      await prisma.$disconnect();
    }
    assert.equal(wecom.frames.filter((f) => f.errcode !== 0).length, 0, 'every reply named a req_id WeCom issued');
  });

  test('enable-stream-reply off: the reply goes once, whole, as markdown', async () => {
    const asked = wecom.pushText(WHOLE_AIBOT, { userId: 'qianer', text: 'all at once please' });
    const frames = await answerTo(asked.reqId);
    assert.deepEqual(frames.map((f) => f.body), [{ msgtype: 'markdown', markdown: { content: 'Echo: all at once please' } }]);
  });

  test('bad input on the socket is logged with the bot id, an event is no query, the next message is answered; a webhook call is refused', async () => {
    wecom.pushRaw(AIBOT, 'not json at all');
    wecom.pushCallback(AIBOT, 'aibot_msg_callback', { msgtype: 'text', text: { content: 'no ids' } });
    wecom.pushCallback(AIBOT, 'aibot_event_callback', { msgtype: 'event', aibotid: AIBOT, chattype: 'single', from: { userid: 'wangwu' }, event: { eventtype: 'enter_chat' } });
    await waitUntil('the bad frames logged', () => gatewayLogs().some((l) => l.includes('malformed event from the platform connection') && l.includes(bot) && l.includes('not JSON')) && gatewayLogs().some((l) => l.includes(bot) && l.includes('malformed message: msgid')), 30_000);
    const next = wecom.pushText(AIBOT, { userId: 'wangwu', text: 'after the noise' });
    assert.equal(await answerText(next.reqId), 'Echo: after the noise');
    const replies = wecom.frames.filter((f) => f.cmd === 'aibot_respond_msg');
    assert.ok(!replies.some((f) => JSON.stringify(f.body).includes('no ids')), 'the message without ids was no query');
    const webhook = await fetch(`${sys.services.get('ingress').url}/bots/${bot}?msg_signature=x&timestamp=1&nonce=1`, { method: 'POST', body: '{"encrypt":"x"}' });
    assert.equal(webhook.status, 403);
    assert.match(await webhook.text(), /long connection/);
  });

  test('WeCom refusing a reply: logged as refused with the bot id, not retried; the next reply goes through', async () => {
    wecom.refuseReplies(1, 846609, 'reply window closed');
    const refused = wecom.pushText(WHOLE_AIBOT, { userId: 'zhaoliu', text: 'this one is refused' });
    await wecom.waitFor((frames) => frames.some((f) => f.reqId === refused.reqId && f.errcode === 846609), 60_000);
    await waitUntil('the refusal logged', () => gatewayLogs().some((l) => l.includes('the platform refused a reply part') && l.includes(wholeBot) && l.includes('846609')), 30_000);
    const next = wecom.pushText(WHOLE_AIBOT, { userId: 'zhaoliu', text: 'and this one is not' });
    assert.equal(await answerText(next.reqId), 'Echo: and this one is not');
    assert.equal(wecom.frames.filter((f) => f.reqId === refused.reqId).length, 1, 'a refused part is not sent again');
  });

  test('SIGKILL of the holder: the other replica signs in and answers; never two connections of the bot', async () => {
    const owner = await waitUntil('the owner of the bot', () => gatewayHolder(sys.services, bot), 30_000);
    const before = { ...wecom.connections.get(AIBOT)! };
    await sys.services.kill(owner, 'SIGKILL');
    await wecom.waitForConnections((c) => {
      const s = c.get(AIBOT);
      return s !== undefined && s.open === 1 && s.subscribed > before.subscribed;
    }, 60_000);
    const asked = wecom.pushText(AIBOT, { userId: 'sunqi', text: 'after the takeover' });
    assert.equal(await answerText(asked.reqId), 'Echo: after the takeover');
    // A duplicate would trail the first answer closely: one more round trip is the yardstick.
    const again = wecom.pushText(AIBOT, { userId: 'sunqi', text: 'and once more' });
    await answerTo(again.reqId);
    assert.equal(wecom.repliesTo(asked.reqId).filter(finished).length, 1, 'answered once');
    assert.equal(wecom.connections.get(AIBOT)?.maxOpen, 1, 'never two connections of one bot');
    assert.equal(wecom.connections.get(AIBOT)?.displaced, 0, 'no replica signed in while another held the bot');
  });

  test('a wrong secret: WeCom refuses the sign-in, the gateway logs it with the bot id and backs off; the secrets never reach the logs', async () => {
    const badBot = await addBot(sys, 'WeCom AI bot (wrong secret)', 'wecombot', { BotId: BAD_AIBOT, Secret: BAD_SECRET, ws_url: wecom.url, 'enable-webhook': false });
    const started = Date.now();
    const refusedBefore = wecom.refused;
    await waitUntil('three refused sign-ins', () => wecom.refused - refusedBefore >= 3 || undefined, 90_000);
    assert.ok(Date.now() - started >= 2_000, 'attempts are spaced out');
    assert.ok(wecom.refused - refusedBefore <= 10, `backed off, not hammering: ${wecom.refused - refusedBefore} attempts`);
    await waitUntil('the refusal logged with the bot id', () => gatewayLogs().some((l) => l.includes('platform connection failed') && l.includes(badBot) && l.includes('40001')), 30_000);
    const still = wecom.pushText(AIBOT, { userId: 'zhouba', text: 'still here' });
    await answerTo(still.reqId);
    for (const secret of [SECRET, BAD_SECRET]) assert.ok(!sys.services.allLogs().includes(secret), 'secrets never reach the logs');
  });
});
