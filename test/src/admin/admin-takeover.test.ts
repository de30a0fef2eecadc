import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { createDatabase, closeDatabase, type Database } from '@conveyor/persistence';
import { addOneBotBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeOneBot, type FakeOneBot, type OneBotAction } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { AdminClient, ADMIN_PASSWORD, SseStream, signedInViewer, startAdmin } from './admin-support.js';

const ACCESS_TOKEN = 'takeover-onebot-token';

/**
 * Human takeover through the whole system and two orchestrator replicas: an operator takes a chat
 * over, its messages are logged and shown live but no model answers them, the operator's replies go
 * out as the bot (HTTP-bot, and OneBot through the gateway), and handing back gives it to the bot again.
 */
describe('human takeover', () => {
  let sys: TestSystem;
  let db: Database;
  let api: AdminClient;
  let viewer: AdminClient;
  let onebot: FakeOneBot;
  let onebotBot: string;
  const streams: SseStream[] = [];

  const chat = (launcherId: string) => ({ botId: sys.botId, launcherType: 'person' as const, launcherId });
  const takeOver = async (target: { botId: string; launcherType: 'person' | 'group'; launcherId: string }, idleMinutes: number | null = 30) => {
    const res = await api.call('POST', '/takeovers', { ...target, idleMinutes });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return AdminApi.Takeover.parse(res.body);
  };
  const handBack = async (target: { botId: string; launcherType: string; launcherId: string }) => {
    const res = await api.call('DELETE', `/takeovers?${new URLSearchParams(target).toString()}`);
    assert.equal(res.status, 204, JSON.stringify(res.body));
  };
  /** Both orchestrator replicas applied the takeover of this chat (each logs it as it hears the event). */
  const appliedEverywhere = (launcherId: string) => waitUntil(`both orchestrators know ${launcherId} is taken over`, () =>
    ['orchestrator', 'orchestrator-2'].every((name) => sys.services.get(name).logs.some((l) => l.includes('takeover: chat taken over by an operator') && l.includes(launcherId))) || undefined, 30_000);
  /** The query of this chat's latest message, once its pipeline is done with it. */
  const settled = (launcherId: string, count: number) => waitUntil(`${count} settled queries of ${launcherId}`, async () => {
    const rows = await db.prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId, status: { in: ['succeeded', 'failed'] } } });
    return rows.length >= count ? rows : undefined;
  }, 30_000);

  before(async () => {
    sys = await startTestSystem();
    onebot = await startFakeOneBot({ accessToken: ACCESS_TOKEN });
    onebotBot = await addOneBotBot(sys, 'QQ bot', { host: onebot.host, port: onebot.port, 'access-token': ACCESS_TOKEN });
    await Promise.all([sys.services.start('orchestrator', {}, 'orchestrator-2'), sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: '3000' })]);
    await onebot.waitForConnections((c) => c.open === 1);
    const admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    viewer = await signedInViewer(api, admin.url, uniqueName('reader'));
    db = createDatabase(sys.db.url, 1);
    const current = await api.call('GET', '/settings');
    assert.equal((await api.call('PUT', '/settings', { version: current.body.version, monitoring: { ...current.body.monitoring, showMessageText: true } })).status, 200);
  });
  after(async () => {
    for (const s of streams) s.close();
    if (db) await closeDatabase(db);
    await sys?.stop();
    await onebot?.close();
  });

  test('taken over: the message is logged and shown live but no model answers; the operator answers as the bot; handed back, the bot answers again', async () => {
    const launcherId = uniqueName('customer');
    const live = await SseStream.open(api, `/live/transcript?${new URLSearchParams(chat(launcherId)).toString()}`);
    streams.push(live);
    const taken = await takeOver(chat(launcherId));
    assert.equal(taken.operator, 'user:admin');
    assert.ok(taken.returnsAt, 'an idle return time');
    await appliedEverywhere(launcherId);

    const modelCalls = sys.llm.requests.length;
    const question = await send(sys, text(launcherId, 'I need a person, please'));
    await settled(launcherId, 1);
    assert.equal(sys.llm.requests.length, modelCalls, 'no model was called');
    assert.equal((await sys.callbacks.waitFor(() => true)).filter((c) => c.json?.reply_to === question).length, 0, 'the bot sent nothing');
    await live.waitFor('the message shown live', (events) => events.some((e) => e.type === 'entry' && (e.data as AdminApi.LiveEntry).text === 'I need a person, please') || undefined);
    await live.waitFor('the chat shown as taken over', (events) => events.some((e) => e.type === 'session' && (e.data as AdminApi.LiveSession).takenOverBy === 'user:admin') || undefined);

    const reply = await api.call('POST', '/takeovers/reply', { ...chat(launcherId), text: 'Hello, this is Ann from support.' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const sent = await sys.callbacks.waitFor((all) => all.some((c) => c.json?.session_id === launcherId && c.json?.message?.[0]?.text === 'Hello, this is Ann from support.'), 30_000);
    assert.equal(sent.filter((c) => c.json?.session_id === launcherId && c.json?.is_final).length, 1, 'one message, as the bot');
    await live.waitFor('the operator line shown live', (events) => events.some((e) => e.type === 'entry' && (e.data as AdminApi.LiveEntry).role === 'operator') || undefined);

    await handBack(chat(launcherId));
    await waitUntil('both orchestrators handed it back', () => ['orchestrator', 'orchestrator-2'].every((name) => sys.services.get(name).logs.some((l) => l.includes('takeover: chat handed back to the bot') && l.includes(launcherId))) || undefined, 30_000);
    sys.llm.script({ text: 'The bot is back.' });
    const again = await finalReply(sys, await send(sys, text(launcherId, 'thanks')));
    assert.equal(again.json.message.at(-1).text, 'The bot is back.');
    const audit = (await api.call('GET', `/audit?resource=session-takeover&resourceId=${encodeURIComponent(`${sys.botId}/person:${launcherId}`)}`)).body.items as AdminApi.AuditEntry[];
    assert.deepEqual(audit.map((e) => [e.actor, e.action]).reverse(), [['user:admin', 'take'], ['user:admin', 'reply'], ['user:admin', 'hand-back']]);
    assert.ok(!JSON.stringify(audit).includes('Ann from support'), 'the audit names no message text');
  });

  test('every orchestrator replica leaves a taken chat to the operator, across several messages, and after a replica restarts', async () => {
    const launcherIds = Array.from({ length: 4 }, () => uniqueName('many'));
    for (const id of launcherIds) await takeOver(chat(id));
    for (const id of launcherIds) await appliedEverywhere(id);
    const modelCalls = sys.llm.requests.length;
    for (const id of launcherIds) await send(sys, text(id, 'anyone there?'));
    for (const id of launcherIds) await settled(id, 1);
    // Restarted, a replica reads the taken chats from Postgres.
    await sys.services.kill('orchestrator-2');
    await sys.services.start('orchestrator', {}, 'orchestrator-2');
    for (const id of launcherIds) await send(sys, text(id, 'still there?'));
    for (const id of launcherIds) await settled(id, 2);
    assert.equal(sys.llm.requests.length, modelCalls, 'no model was called for any of them');
    for (const id of launcherIds) await handBack(chat(id));
  });

  test('an operator reply on a gateway platform (OneBot) goes out through the replica holding the connection', async () => {
    const target = { botId: onebotBot, launcherType: 'person' as const, launcherId: '424242' };
    await takeOver(target, null);
    const reply = await api.call('POST', '/takeovers/reply', { ...target, text: 'An operator here.' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const textOf = (a: OneBotAction) => (Array.isArray(a.params.message) ? a.params.message : []).map((s: { type: string; data: { text?: string } }) => s.data.text ?? '').join('');
    await onebot.waitFor((a) => a.some((x) => x.action === 'send_msg' && x.params.user_id === 424242 && textOf(x) === 'An operator here.'), 30_000);
    await handBack(target);
  });

  test('a viewer cannot take over, reply or hand back; a reply to a chat not taken over is refused', async () => {
    const launcherId = uniqueName('viewer');
    assert.equal((await viewer.call('POST', '/takeovers', { ...chat(launcherId), idleMinutes: 5 })).status, 403);
    assert.equal((await viewer.call('POST', '/takeovers/reply', { ...chat(launcherId), text: 'x' })).status, 403);
    assert.equal((await viewer.call('DELETE', `/takeovers?${new URLSearchParams(chat(launcherId)).toString()}`)).status, 403);
    const notTaken = await api.call('POST', '/takeovers/reply', { ...chat(launcherId), text: 'x' });
    assert.equal(notTaken.status, 409);
    assert.equal((await api.call('POST', '/takeovers', { ...chat(launcherId), botId: uniqueName('nobot') })).status, 404);
    assert.equal((await viewer.call('GET', '/takeovers')).status, 200, 'a viewer sees the list');
  });

  test('a takeover racing a running reply: that reply ends once, and the next message is the operator\'s', async () => {
    const launcherId = uniqueName('race');
    sys.llm.script({ text: 'A long streamed answer that is still being written when the operator steps in.', chunkSize: 2, tickMs: 20, holdOpen: true });
    const running = await send(sys, text(launcherId, 'tell me everything'));
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === running), 30_000);
    await takeOver(chat(launcherId));
    await appliedEverywhere(launcherId);
    sys.llm.release();
    const done = await finalReply(sys, running);
    assert.equal(done.json.message.at(-1).text.length > 0, true);
    const modelCalls = sys.llm.requests.length;
    const next = await send(sys, text(launcherId, 'and now?'));
    await settled(launcherId, 2);
    assert.equal(sys.llm.requests.length, modelCalls, 'the next message called no model');
    const all = await sys.callbacks.waitFor(() => true);
    assert.equal(all.filter((c) => c.json?.reply_to === running && c.json?.is_final).length, 1, 'the running reply ended once');
    assert.equal(all.filter((c) => c.json?.reply_to === next).length, 0);
    await handBack(chat(launcherId));
  });
});
