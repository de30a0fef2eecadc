import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext } from '@conveyor/platform-kit';
import { DingtalkAdapter, renderReply, splitText } from './adapter.js';

const BOT = '5b0c8f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f';
const NOW = 1_764_584_000_000;
const WEBHOOK = 'http://dingtalk.test/robot/sendBySession?session=s1';
const person: ReplyRoute = { botId: BOT, adapter: 'dingtalk', sessionId: 'staff-alice', launcherType: 'person', launcherId: 'staff-alice', senderId: 'staff-alice', replyTo: `${NOW + 3_600_000} ${WEBHOOK}` };
const group: ReplyRoute = { ...person, sessionId: 'cidGroup==', launcherType: 'group', launcherId: 'cidGroup==' };
const configsOf = (extra: Record<string, unknown> = {}): BotConfigs => ({ get: async () => ({
  adapter: 'dingtalk',
  adapterConfig: { client_id: 'dingappkey', client_secret: 'S3CRET-app', robot_code: 'dingrobot', api_base_url: 'http://dingtalk.test/', ...extra },
}) });
function ctx(over: Partial<DeliveryContext> = {}, state = new Map<string, string>()): DeliveryContext {
  return { queryId: 'q1', partKey: '1:0:0', chunkOrdinal: 1, sequence: 1, timestamp: new Date(), state: { get: async (k) => state.get(k) ?? null, set: async (k, v) => void state.set(k, v) }, ...over };
}
const reply = (text: string, more: Partial<{ isFinal: boolean; stream: boolean }> = {}) => ({ message: [{ type: 'Plain' as const, text }], isFinal: true, stream: false, ...more });

/** A scripted DingTalk: `webhook` answers each session webhook call in turn (HTTP status, errcode), then 200/0. */
function stubDingtalk(webhook: { status: number; errcode?: number }[] = [], openApi: number[] = []) {
  const calls: { path: string; token: string | null; body: any }[] = [];
  let tokens = 0;
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const body = JSON.parse(String(init?.body));
    const token = new Headers(init?.headers).get('x-acs-dingtalk-access-token');
    calls.push({ path: url.pathname, token, body });
    if (url.pathname === '/v1.0/oauth2/accessToken') return Response.json({ accessToken: `tok${++tokens}`, expireIn: 7200 });
    if (url.pathname === '/robot/sendBySession') {
      const a = webhook.shift() ?? { status: 200 };
      return Response.json({ errcode: a.errcode ?? 0, errmsg: a.errcode ? 'session expired' : 'ok' }, { status: a.status });
    }
    const status = openApi.shift() ?? 200;
    if (status === 401) return Response.json({ code: 'InvalidAuthentication', message: 'token invalid' }, { status });
    if (status !== 200) return Response.json({ code: 'Forbidden', message: 'no' }, { status });
    return Response.json({ processQueryKey: 'k' });
  };
  return { calls, fetchImpl, tokens: () => tokens };
}

test('renderReply: text as is, an At as a mention of the id, images as markdown only in markdown', () => {
  const chain = [{ type: 'At' as const, target: 'staff-bob', display: '' }, { type: 'Plain' as const, text: 'hi' }, { type: 'Image' as const, image_id: '', url: 'https://img.test/a.png', path: '', base64: '' }];
  assert.deepEqual(renderReply(chain, true), { markdown: true, text: '@staff-bob hi\n![image](https://img.test/a.png)\n', atUserIds: ['staff-bob'] });
  assert.equal(renderReply(chain, false).text, '@staff-bob hi');
});

test('splitText keeps pieces within the bound, prefers line ends, joins back, and cuts past the part bound', () => {
  const text = `${'a'.repeat(3000)}\n${'b'.repeat(3000)}`;
  const parts = splitText(text, 4000);
  assert.deepEqual(parts.map((p) => p.length), [3001, 3000]);
  assert.equal(parts.join(''), text);
  const cut = splitText('x'.repeat(1000), 100, 3);
  assert.equal(cut.length, 3);
  assert.ok(cut[2]!.endsWith('… (truncated)') && cut[2]!.length <= 100);
});

test('a reply goes through the session webhook while it is valid: markdown by default, mentioning whom the chain mentions', async () => {
  const d = stubDingtalk();
  const adapter = new DingtalkAdapter(configsOf(), d.fetchImpl, () => NOW);
  const chain = [{ type: 'At' as const, target: 'staff-alice', display: '' }, { type: 'Plain' as const, text: 'answer' }];
  assert.deepEqual(await adapter.deliver(group, { message: chain, isFinal: true, stream: false }, ctx()), { delivered: true });
  assert.deepEqual(d.calls.map((c) => c.path), ['/robot/sendBySession']);
  assert.deepEqual(d.calls[0]!.body, { msgtype: 'markdown', markdown: { title: '@staff-alice answer', text: '@staff-alice answer' }, at: { atUserIds: ['staff-alice'], isAtAll: false } });
  const plain = new DingtalkAdapter(configsOf({ markdown_card: false }), d.fetchImpl, () => NOW);
  await plain.deliver(person, reply('hello'), ctx());
  assert.deepEqual(d.calls[1]!.body, { msgtype: 'text', text: { content: 'hello' }, at: { atUserIds: [], isAtAll: false } });
});

test('an expired webhook, or one DingTalk refuses, gives way to the robot OpenAPI: batchSend to a person, groupMessages/send to a group; the token is cached', async () => {
  const d = stubDingtalk([{ status: 200, errcode: 300001 }]);
  const adapter = new DingtalkAdapter(configsOf({ markdown_card: false }), d.fetchImpl, () => NOW);
  assert.deepEqual(await adapter.deliver(person, reply('one'), ctx()), { delivered: true });
  const expired = { ...group, replyTo: `${NOW - 1} ${WEBHOOK}` };
  assert.deepEqual(await adapter.deliver(expired, reply('two'), ctx()), { delivered: true });
  assert.deepEqual(d.calls.map((c) => c.path), ['/robot/sendBySession', '/v1.0/oauth2/accessToken', '/v1.0/robot/oToMessages/batchSend', '/v1.0/robot/groupMessages/send']);
  assert.deepEqual(d.calls[1]!.body, { appKey: 'dingappkey', appSecret: 'S3CRET-app' });
  assert.deepEqual(d.calls[2]!.body, { robotCode: 'dingrobot', userIds: ['staff-alice'], msgKey: 'sampleText', msgParam: '{"content":"one"}' });
  assert.deepEqual(d.calls[3]!.body, { robotCode: 'dingrobot', openConversationId: 'cidGroup==', msgKey: 'sampleText', msgParam: '{"content":"two"}' });
  assert.ok(d.calls.slice(2).every((c) => c.token === 'tok1'), 'one token for both');
});

test('a refused token is replaced once; another refusal fails the part naming the path, never the secret or the token', async () => {
  const d = stubDingtalk([], [401, 200, 403]);
  const adapter = new DingtalkAdapter(configsOf(), d.fetchImpl, () => NOW);
  const noWebhook = { ...person, replyTo: 'msg1' };
  assert.deepEqual(await adapter.deliver(noWebhook, reply('a'), ctx()), { delivered: true });
  assert.equal(d.tokens(), 2);
  const failed = await adapter.deliver(noWebhook, reply('b'), ctx());
  assert.equal(failed.delivered, false);
  if (!failed.delivered) {
    assert.match(failed.reason, /oToMessages\/batchSend: HTTP 403 Forbidden/);
    assert.doesNotMatch(failed.reason, /S3CRET|tok\d/);
  }
});

test('a streamed part before the final one sends nothing without a card template; a resent part goes on after the pieces already sent', async () => {
  const d = stubDingtalk([{ status: 200 }, { status: 500 }, { status: 500 }, { status: 500 }]);
  const adapter = new DingtalkAdapter(configsOf({ 'enable-stream-reply': true }), d.fetchImpl, () => NOW);
  assert.deepEqual(await adapter.deliver(person, reply('partial', { isFinal: false, stream: true }), ctx()), { delivered: true });
  assert.equal(d.calls.length, 0);
  const c = ctx();
  const long = `${'x'.repeat(3999)}\n${'y'.repeat(10)}`;
  const failed = await adapter.deliver(person, reply(long), c);
  assert.equal(failed.delivered, false);
  assert.deepEqual(await adapter.deliver(person, reply(long), c), { delivered: true });
  const sent = d.calls.filter((x) => x.path === '/robot/sendBySession').map((x) => x.body.markdown.text as string);
  assert.equal(sent.filter((t) => t.startsWith('x')).length, 1, 'the first piece is not sent again');
});

test('with enable-stream-reply and a card template, a streamed reply creates one AI card and streams into it, every 8th snapshot and finalized', async () => {
  const d = stubDingtalk();
  const adapter = new DingtalkAdapter(configsOf({ 'enable-stream-reply': true, card_template_id: 'tpl.schema' }), d.fetchImpl, () => NOW);
  const state = new Map<string, string>();
  for (let n = 1; n <= 10; n++) {
    assert.deepEqual(await adapter.deliver(group, reply(`t${n}`, { stream: true, isFinal: false }), ctx({ chunkOrdinal: n, partKey: `1:${n}:0` }, state)), { delivered: true });
  }
  await adapter.deliver(group, reply('whole', { stream: true, isFinal: true }), ctx({ chunkOrdinal: 11, partKey: '1:11:0' }, state));
  const paths = d.calls.map((c) => c.path);
  assert.deepEqual(paths, ['/v1.0/oauth2/accessToken', '/v1.0/card/instances/createAndDeliver', '/v1.0/card/streaming', '/v1.0/card/streaming', '/v1.0/card/streaming']);
  const create = d.calls[1]!.body;
  assert.equal(create.cardTemplateId, 'tpl.schema');
  assert.equal(create.openSpaceId, 'dtv1.card//IM_GROUP.cidGroup==');
  assert.deepEqual(create.imGroupOpenDeliverModel, { robotCode: 'dingrobot' });
  const updates = d.calls.slice(2).map((c) => [c.body.content, c.body.isFinalize, c.body.outTrackId === create.outTrackId]);
  assert.deepEqual(updates, [['t1', false, true], ['t9', false, true], ['whole', true, true]]);
});
