import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { startCallbackReceiver, type CallbackReceiver } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { AdminClient, SseStream, signedInViewer, startAdmin } from './admin-support.js';

const WEBHOOK_TOKEN = 'hook-token-5f2a9c';

/**
 * A chat asks for a person, by a keyword or through the model's tool: it is marked waiting for an
 * operator (listed, shown live, announced to the bot's webhook once), until an operator takes it over
 * or dismisses the request.
 */
describe('requests for a person', () => {
  let sys: TestSystem;
  let api: AdminClient;
  let viewer: AdminClient;
  let hooks: CallbackReceiver;
  const streams: SseStream[] = [];
  /** Answers 503 to webhook calls whose path has `/failing`. */
  const hookStatus = (path: string) => (path.includes('/failing') ? 503 : 200);

  const chat = (launcherId: string) => ({ botId: sys.botId, launcherType: 'person' as const, launcherId });
  const setHandoff = async (humanHandoff: Record<string, unknown> | null) => {
    const bot = AdminApi.Bot.parse((await api.call('GET', `/bots/${sys.botId}`)).body);
    const res = await api.call('PATCH', `/bots/${sys.botId}`, { version: bot.version, humanHandoff });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return AdminApi.Bot.parse(res.body);
  };
  const waiting = async () => AdminApi.HumanRequestList.parse((await api.call('GET', '/human-requests')).body).items;
  const hooksFor = (launcherId: string) => hooks.received.filter((h) => h.json?.launcherId === launcherId);

  before(async () => {
    sys = await startTestSystem();
    hooks = await startCallbackReceiver({ secret: 'unused', respond: (_n, c) => hookStatus(c.path) });
    const admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    viewer = await signedInViewer(api, admin.url, uniqueName('reader'));
    const current = await api.call('GET', '/settings');
    assert.equal((await api.call('PUT', '/settings', { version: current.body.version, monitoring: { ...current.body.monitoring, showMessageText: true } })).status, 200);
  });
  after(async () => {
    for (const s of streams) s.close();
    await sys?.stop();
    await hooks?.close();
  });

  test('the settings: the webhook URL is a secret (masked, kept when sent back masked), checked, and turned off with null', async () => {
    const saved = await setHandoff({ keywords: ['human', '人工'], tool: true, reply: 'A person will answer here soon.', webhookUrl: `${hooks.url}/hook?token=${WEBHOOK_TOKEN}` });
    assert.deepEqual(saved.humanHandoff?.keywords, ['human', '人工']);
    assert.ok(saved.humanHandoff?.webhookUrl?.startsWith(AdminApi.SECRET_MASK_PREFIX), 'masked');
    assert.ok(!JSON.stringify(saved).includes(WEBHOOK_TOKEN), 'the token is not shown');
    // Sent back as shown, the stored URL stays (the keyword test below reaches it with its token).
    const again = await setHandoff({ ...saved.humanHandoff });
    assert.equal(again.humanHandoff?.webhookUrl, saved.humanHandoff?.webhookUrl);
    const bot = AdminApi.Bot.parse((await api.call('GET', `/bots/${sys.botId}`)).body);
    const bad = await api.call('PATCH', `/bots/${sys.botId}`, { version: bot.version, humanHandoff: { keywords: ['human'], webhookUrl: 'ftp://example.com/x' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.field, 'body.humanHandoff.webhookUrl');
    const tooMany = await api.call('PATCH', `/bots/${sys.botId}`, { version: bot.version, humanHandoff: { keywords: Array.from({ length: 21 }, (_, i) => `k${i}`) } });
    assert.equal(tooMany.status, 400);
    assert.equal((await viewer.call('PATCH', `/bots/${sys.botId}`, { version: bot.version, humanHandoff: null })).status, 403);
  });

  test('a keyword: the bot acknowledges without a model, the chat waits (listed, live, one webhook call however often it asks), and taking it over ends the wait', async () => {
    const launcherId = uniqueName('asker');
    const live = await SseStream.open(api, '/live/sessions');
    streams.push(live);
    const modelCalls = sys.llm.requests.length;
    const ack = await finalReply(sys, await send(sys, text(launcherId, '  HUMAN ')));
    assert.equal(ack.json.message.at(-1).text, '[bot] A person will answer here soon.');
    assert.equal(sys.llm.requests.length, modelCalls, 'no model was called');

    const [hook] = await hooks.waitFor(() => hooksFor(launcherId).length >= 1, 30_000).then(() => hooksFor(launcherId), (err: Error) => { throw new Error(`${err.message}: ${JSON.stringify(hooks.received.map((h) => [h.path, h.json]))}`); });
    assert.ok(hook.path.endsWith(`/hook?token=${WEBHOOK_TOKEN}`), `the stored URL, token included: ${hook.path}`);
    assert.equal(hook.headers['content-type'], 'application/json');
    assert.match(String(hook.headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, 'the call carries the message\'s trace');
    assert.deepEqual({ ...hook.json, requestedAt: undefined, queryId: undefined }, { event: 'human_requested', botId: sys.botId, launcherType: 'person', launcherId, via: 'keyword', reason: 'HUMAN', requestedAt: undefined, queryId: undefined });

    const listed = (await waiting()).find((w) => w.launcherId === launcherId);
    assert.equal(listed?.via, 'keyword');
    assert.equal(listed?.reason, 'HUMAN');
    assert.equal(AdminApi.HumanRequestList.parse((await viewer.call('GET', '/human-requests')).body).items.some((w) => w.launcherId === launcherId), true, 'a viewer sees the list');
    await live.waitFor('the chat shown waiting', (events) => events.some((e) => e.type === 'session' && (e.data as AdminApi.LiveSession).launcherId === launcherId && (e.data as AdminApi.LiveSession).waitingSince !== null) || undefined);

    // Asking again while it waits: acknowledged again, nobody notified again.
    const second = await finalReply(sys, await send(sys, text(launcherId, '人工')));
    assert.equal(second.json.message.at(-1).text, '[bot] A person will answer here soon.');
    await waitUntil('the orchestrator saw it already waiting', () => sys.services.get('orchestrator').logs.some((l) => l.includes('already waits for an operator') && l.includes(launcherId)) || undefined, 30_000);
    assert.equal(hooksFor(launcherId).length, 1, 'one webhook call');

    const taken = await api.call('POST', '/takeovers', { ...chat(launcherId), idleMinutes: 5 });
    assert.equal(taken.status, 201);
    assert.equal((await waiting()).some((w) => w.launcherId === launcherId), false, 'taking it over ends the wait');
    await live.waitFor('the chat shown taken, no longer waiting', (events) => events.some((e) => e.type === 'session' && (e.data as AdminApi.LiveSession).launcherId === launcherId && (e.data as AdminApi.LiveSession).takenOverBy !== null && (e.data as AdminApi.LiveSession).waitingSince === null) || undefined);
    assert.equal((await api.call('DELETE', `/takeovers?${new URLSearchParams(chat(launcherId)).toString()}`)).status, 204);
    // A message that merely contains the keyword is the model's.
    sys.llm.script({ text: 'Happy to help.' });
    const normal = await finalReply(sys, await send(sys, text(launcherId, 'are you human?')));
    assert.equal(normal.json.message.at(-1).text, 'Happy to help.');
  });

  test('the model\'s tool marks the chat waiting with its reason; a viewer cannot dismiss, an admin can (audited)', async () => {
    const launcherId = uniqueName('refund');
    sys.llm.script({ toolCalls: [{ name: 'request_human', arguments: '{"reason":"wants a refund the bot cannot grant"}' }] }, { text: 'I have asked a colleague to join.' });
    const reply = await finalReply(sys, await send(sys, text(launcherId, 'I want my money back')));
    assert.equal(reply.json.message.at(-1).text, 'I have asked a colleague to join.');
    const tools = (sys.llm.requests.at(-2)?.body.tools ?? []) as Array<{ function: { name: string } }>;
    const offered = tools.map((t) => t.function.name);
    assert.ok(offered.includes('request_human'), `the tool was offered: ${offered.join(', ')}`);
    const toolAnswer = sys.llm.requests.at(-1)?.body.messages?.find((m: { role: string }) => m.role === 'tool');
    assert.match(String(toolAnswer?.content), /operators_notified/);
    const listed = (await waiting()).find((w) => w.launcherId === launcherId);
    assert.equal(listed?.via, 'tool');
    assert.equal(listed?.reason, 'wants a refund the bot cannot grant');
    await hooks.waitFor(() => hooksFor(launcherId).some((h) => h.json.via === 'tool'), 30_000);

    const target = new URLSearchParams(chat(launcherId)).toString();
    assert.equal((await viewer.call('DELETE', `/human-requests?${target}`)).status, 403);
    assert.equal((await api.call('DELETE', `/human-requests?${target}`)).status, 204);
    assert.equal((await api.call('DELETE', `/human-requests?${target}`)).status, 404, 'no longer waiting');
    assert.equal((await waiting()).some((w) => w.launcherId === launcherId), false);
    const audit = (await api.call('GET', `/audit?resource=human-request&resourceId=${encodeURIComponent(`${sys.botId}/person:${launcherId}`)}`)).body.items as AdminApi.AuditEntry[];
    assert.deepEqual(audit.map((e) => [e.actor, e.action]), [['user:admin', 'dismiss']]);
  });

  test('a webhook that fails is tried twice and logged with the trace id; the chat still waits and the user still gets the reply', async () => {
    await setHandoff({ keywords: ['agent'], tool: false, webhookUrl: `${hooks.url}/failing?token=${WEBHOOK_TOKEN}` });
    const launcherId = uniqueName('unlucky');
    const ack = await finalReply(sys, await send(sys, text(launcherId, 'agent')));
    assert.match(ack.json.message.at(-1).text, /^\[bot\] /);
    await hooks.waitFor(() => hooksFor(launcherId).length >= 2, 30_000);
    const line = await waitUntil('the failure logged', () => sys.services.get('orchestrator').logs.find((l) => l.includes('human request webhook not taken') && l.includes('HTTP 503')), 30_000);
    assert.match(line, /"trace_id":"[0-9a-f]{32}"/);
    assert.ok(!line.includes(WEBHOOK_TOKEN), 'the URL\'s token is not logged');
    assert.equal(hooksFor(launcherId).length, 2, 'tried twice, no more');
    assert.ok((await waiting()).some((w) => w.launcherId === launcherId));
    // Turned off, the keyword is an ordinary message again.
    await setHandoff(null);
    sys.llm.script({ text: 'Plain answer.' });
    const plain = await finalReply(sys, await send(sys, text(uniqueName('after'), 'agent')));
    assert.equal(plain.json.message.at(-1).text, 'Plain answer.');
  });
});
