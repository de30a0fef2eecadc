import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HumanHandoff, LIMITS, RetryableError, type LlmMessage, type RunRequest } from '@conveyor/contracts';
import { STAGE_REGISTRY } from './registry.js';
import { recordingDeps, testQuery } from '../testing.js';
import type { PipelineDeps, OutboundReply } from '../engine/ports.js';
import type { PipelineQuery } from '../engine/query.js';
import type { StageResult } from '../engine/result.js';
import { executeFrom } from '../engine/execute.js';
import { truncateRounds } from './truncator.js';
import { BAN_WORD_NOTICE } from '../filters/ban-words.js';
import { RATE_LIMIT_NOTICE } from './rate-limit.js';
import { firstMatch, maskAll, UnsafeRegexError } from '../regex/safe-regex.js';
import { fileURLToPath } from 'node:url';

type Name = keyof typeof STAGE_REGISTRY;
function stage(name: Name, q: PipelineQuery, deps: PipelineDeps) {
  return STAGE_REGISTRY[name]({ name, config: q.config, deps });
}
async function run(name: Name, q: PipelineQuery, extra: Partial<PipelineDeps> = {}): Promise<StageResult> {
  return (await stage(name, q, recordingDeps(extra).deps).process(q)) as StageResult;
}
async function collect(name: Name, q: PipelineQuery, extra: Partial<PipelineDeps> = {}): Promise<StageResult[]> {
  const out: StageResult[] = [];
  for await (const r of stage(name, q, recordingDeps(extra).deps).process(q) as AsyncIterable<StageResult>) out.push(r);
  return out;
}

test('group rules: person chats pass; a group needs at-bot, prefix, regexp or random', async () => {
  assert.equal((await run('GroupRespondRuleCheckStage', testQuery({ chain: [{ type: 'Plain', text: 'hi' }] }))).type, 'continue');
  const silent = await run('GroupRespondRuleCheckStage', testQuery({ group: true, chain: [{ type: 'Plain', text: 'hi' }] }));
  assert.deepEqual(silent, { type: 'interrupt' });

  const at = testQuery({ group: true, chain: [{ type: 'At', target: 'http_bot', display: '' }, { type: 'Plain', text: ' hi' }, { type: 'At', target: 'http_bot', display: '' }] });
  assert.equal((await run('GroupRespondRuleCheckStage', at)).type, 'continue');
  assert.deepEqual(at.messageChain, [{ type: 'Plain', text: ' hi' }], 'both mentions are removed');

  const pre = testQuery({ group: true, chain: [{ type: 'Plain', text: 'ai tell me ai things' }, { type: 'Plain', text: 'ai' }] });
  assert.equal((await run('GroupRespondRuleCheckStage', pre)).type, 'continue');
  assert.deepEqual(pre.messageChain, [{ type: 'Plain', text: ' tell me ai things' }, { type: 'Plain', text: 'ai' }], 'stripped once, from the start');

  const re = testQuery({ group: true, chain: [{ type: 'Plain', text: 'bot: go' }], config: { trigger: { 'group-respond-rules': { prefix: [], regexp: ['go', 'b.t:'] } } } });
  assert.equal((await run('GroupRespondRuleCheckStage', re)).type, 'continue', 'regexp matches at the start');
  const reMiss = testQuery({ group: true, chain: [{ type: 'Plain', text: 'say go' }], config: { trigger: { 'group-respond-rules': { prefix: [], regexp: ['go', '(?=x)'] } } } });
  assert.equal((await run('GroupRespondRuleCheckStage', reMiss)).type, 'interrupt', 'match mode is anchored; an RE2-invalid pattern is no match');

  const rnd = testQuery({ group: true, config: { trigger: { 'group-respond-rules': { random: 0.5 } } } });
  assert.equal((await run('GroupRespondRuleCheckStage', rnd, { random: () => 0.49 })).type, 'continue');
  assert.equal((await run('GroupRespondRuleCheckStage', rnd, { random: () => 0.5 })).type, 'interrupt');

  const routed = testQuery({ group: true });
  routed.variables._routed_by_rule = true;
  assert.equal((await run('GroupRespondRuleCheckStage', routed)).type, 'continue');
});

test('access control: blacklist and whitelist with type wildcards, exact ids and *_<id> (numeric too)', async () => {
  const acl = (mode: string, list: string[], o: { group?: boolean; launcherId?: string; senderId?: string } = {}) =>
    run('BanSessionCheckStage', testQuery({ ...o, config: { trigger: { 'access-control': { mode, [mode]: list } } } })).then((r) => r.type);
  assert.equal(await acl('blacklist', []), 'continue');
  assert.equal(await acl('blacklist', ['person_*']), 'interrupt');
  assert.equal(await acl('blacklist', ['group_*']), 'continue');
  assert.equal(await acl('blacklist', ['person_123'], { launcherId: '123' }), 'interrupt');
  assert.equal(await acl('blacklist', ['*_42'], { group: true, launcherId: 'g1', senderId: '42' }), 'interrupt', '*_<id> matches the sender');
  assert.equal(await acl('whitelist', ['group_g1'], { group: true, launcherId: 'g1' }), 'continue');
  const r = await run('BanSessionCheckStage', testQuery({ config: { trigger: { 'access-control': { mode: 'whitelist', whitelist: [] } } } }));
  assert.deepEqual(r, { type: 'interrupt', consoleNotice: 'Ignore message according to access control: person_s1' });
});

const banWords = { mask: '*', maskWord: '', words: ['bad\\w*', '坏'] };

test('pre filter: ignore rules first (silent), then ban words (notice), text-only messages only', async () => {
  const cfg = { trigger: { 'ignore-rules': { prefix: ['#'], regexp: ['secret'] } } };
  assert.deepEqual(await run('PreContentFilterStage', testQuery({ chain: [{ type: 'Plain', text: '#badword' }], config: cfg }), { banWords }),
    { type: 'interrupt', userNotice: undefined, consoleNotice: 'Ignore message according to prefix rule in ignore_rules' });
  assert.equal((await run('PreContentFilterStage', testQuery({ chain: [{ type: 'Plain', text: 'my secret' }], config: cfg }))).type, 'interrupt');
  const banned = await run('PreContentFilterStage', testQuery({ chain: [{ type: 'Plain', text: 'so badly' }] }), { banWords });
  assert.equal(banned.type, 'interrupt');
  assert.equal(banned.userNotice, BAN_WORD_NOTICE);
  const q = testQuery({ chain: [{ type: 'Source', id: 1, timestamp: 1 }, { type: 'Plain', text: '  fine  ' }] });
  assert.equal((await run('PreContentFilterStage', q, { banWords })).type, 'continue');
  assert.deepEqual(q.messageChain, [{ type: 'Plain', text: 'fine' }], 'the chain becomes one stripped Plain');
  const img = testQuery({ chain: [{ type: 'Plain', text: 'bad' }, { type: 'Image', image_id: '', url: 'http://x', path: '', base64: '' }] });
  assert.equal((await run('PreContentFilterStage', img, { banWords })).type, 'continue', 'non-text messages skip the filters');
  const outOnly = testQuery({ chain: [{ type: 'Plain', text: 'bad' }], config: { safety: { 'content-filter': { scope: 'output-msg' } } } });
  assert.equal((await run('PreContentFilterStage', outOnly, { banWords })).type, 'continue');
});

test('post filter masks whole replies, streamed chunks and command replies', async () => {
  const q = testQuery();
  q.respMessages.push({ kind: 'chunk', text: 'so baddest 坏 day', isFinal: false, hasToolCalls: false, toolNames: [] });
  assert.equal((await run('PostContentFilterStage', q, { banWords })).type, 'continue');
  assert.deepEqual(q.respMessages[0], { kind: 'chunk', text: 'so ******* * day', isFinal: false, hasToolCalls: false, toolNames: [] });
  const m = testQuery();
  m.respMessages.push({ kind: 'message', message: { role: 'assistant', content: 'bad' } });
  await run('PostContentFilterStage', m, { banWords: { ...banWords, maskWord: '[x]' } });
  assert.deepEqual(m.respMessages[0], { kind: 'message', message: { role: 'assistant', content: '[x]' } });
});

test('safe regex: LangBot limits, linear time on catastrophic patterns', () => {
  const t = Date.now();
  assert.equal(firstMatch(['(a+)+$'], 'a'.repeat(100_000) + 'b', 'search'), -1);
  assert.ok(Date.now() - t < 1000);
  assert.throws(() => firstMatch(Array(65).fill('a'), 'a', 'search'), UnsafeRegexError);
  assert.throws(() => firstMatch(['a'.repeat(1025)], 'a', 'search'), UnsafeRegexError);
  assert.throws(() => firstMatch(['a'], 'a'.repeat(1024 * 1024 + 1), 'search'), UnsafeRegexError);
  assert.deepEqual(maskAll(['x+'], 'axxxb', '#', ''), { text: 'a###b', matched: true });
  assert.equal(maskAll(['x+'], 'x'.repeat(100), '*', '').text.length, 64, 'a replacement is at most 64 characters');
});

test('PreProcessor: history, per-turn prompt with the date once, user message, variables, vision gating', async () => {
  const history: LlmMessage[] = [
    { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } }, { type: 'image_url', image_url: { url: '' } }] },
    { role: 'assistant', content: 'nice' },
  ];
  const q = testQuery({ group: true, chain: [{ type: 'Plain', text: 'hi ' }, { type: 'Image', image_id: '', url: '', path: '', base64: 'QUJD' }, { type: 'Quote', id: 1, group_id: null, sender_id: null, target_id: null, origin: [{ type: 'Plain', text: 'quoted' }] }] });
  const deps = {
    history: { load: async () => ({ conversationId: 'c1', history }) },
    models: { abilities: async (id: string) => (id === 'm1' ? ['func_call'] : null) },
    now: () => new Date(2026, 0, 5, 12),
  };
  q.config.ai['local-agent'].model = { primary: 'm1', fallbacks: ['gone'] };
  q.config.ai['local-agent'].prompt = [{ role: 'system', content: 'Be brief.' }];
  assert.equal((await run('PreProcessor', q, deps)).type, 'continue');
  assert.equal(q.conversationId, 'c1');
  assert.match(q.prompt[0].content as string, /^Be brief\.\n\nCurrent date: 2026-01-05 \(Monday\)\. Resolve relative time/);
  assert.equal(q.config.ai['local-agent'].prompt[0].content, 'Be brief.', 'the stored preset is never changed');
  assert.deepEqual(q.messages[0].content, [{ type: 'text', text: 'look' }], 'no vision: images leave the turn copy');
  assert.deepEqual(q.userMessage, { role: 'user', content: [{ type: 'text', text: 'hi ' }, { type: 'text', text: 'quoted' }] });
  assert.equal(q.variables.user_message_text, 'hi ', 'quoted text is not user text');
  assert.equal(q.variables.session_id, 'group_s1');
  assert.equal(q.variables.group_name, 'Room');
  assert.equal(q.variables.sender_name, 'Alice');
  assert.equal(q.variables.msg_create_time, Date.parse('2026-01-05T08:00:00.000Z') / 1000);
  assert.equal(q.variables._fallback_model_uuids, undefined, 'missing fallbacks are not listed');

  const v = testQuery({ chain: [{ type: 'Image', image_id: '', url: 'http://img', path: '', base64: '' }] });
  v.config.ai['local-agent'].model = 'm2';
  await run('PreProcessor', v, { ...deps, models: { abilities: async () => ['vision'] } });
  assert.deepEqual(v.userMessage?.content, [{ type: 'image_url', image_url: { url: 'http://img' } }]);
  assert.equal((v.messages[0].content as unknown[]).length, 2, 'vision keeps images, drops emptied ones');
});

test('round truncator keeps the last max-round user turns', () => {
  const m = (role: LlmMessage['role'], c: string): LlmMessage => ({ role, content: c });
  const h = [m('assistant', 'x'), m('user', '1'), m('assistant', 'a1'), m('user', '2'), m('assistant', 'a2'), m('tool', 't'), m('user', '3'), m('assistant', 'a3')];
  assert.deepEqual(truncateRounds(h, 2).map((x) => x.content), ['2', 'a2', 't', '3', 'a3']);
  assert.deepEqual(truncateRounds(h, 10).map((x) => x.content), ['1', 'a1', '2', 'a2', 't', '3', 'a3']);
});

test('rate limit: drop answers LangBot\'s notice, wait defers through the bus keeping the session', async () => {
  const denied = { require: async () => ({ allowed: false as const, retryInMs: 1234 }) };
  const drop = await run('RequireRateLimitOccupancy', testQuery(), { rateLimiter: denied });
  assert.deepEqual(drop, { type: 'interrupt', consoleNotice: '根据限速规则忽略 person:s1 消息', userNotice: RATE_LIMIT_NOTICE });
  const extended: number[] = [];
  const leases = { extend: async (_q: unknown, ms: number) => void extended.push(ms) };
  const wait = testQuery({ config: { safety: { 'rate-limit': { strategy: 'wait' } } } });
  await assert.rejects(Promise.resolve(run('RequireRateLimitOccupancy', wait, { rateLimiter: denied, leases })), (e: unknown) => e instanceof RetryableError && e.delayMs === 1234);
  assert.ok(extended[0] >= 1234, 'the session lease outlives the wait');
});

test('ReleaseRateLimitOccupancy lets the final item pass without freeing the session (the reply\'s end does, after the history write)', async () => {
  const released: string[] = [];
  const leases = { release: async () => void released.push('release'), extend: async () => void released.push('extend') };
  const q = testQuery();
  q.respMessages.push({ kind: 'chunk', text: 'ab', isFinal: true, hasToolCalls: false, toolNames: [] });
  assert.deepEqual(await run('ReleaseRateLimitOccupancy', q, { leases }), { type: 'continue' });
  assert.deepEqual(released, []);
});

test('MessageProcessor: commands in place with [bot] replies downstream; chat hands off a run request', async () => {
  const q = testQuery({ chain: [{ type: 'Plain', text: '！nope x' }] });
  const results = await collect('MessageProcessor', q);
  assert.equal(results.length, 1);
  assert.deepEqual(q.respMessages, [{ kind: 'command', text: '未知命令: nope' }]);
  let reset = 0;
  const r = testQuery({ chain: [{ type: 'Plain', text: '!reset' }] });
  await collect('MessageProcessor', r, { commands: { resetConversation: async () => (reset++, true) } });
  assert.equal(reset, 1);
  const runs: unknown[] = [];
  const c = testQuery({ chain: [{ type: 'Plain', text: 'hello' }] });
  c.userMessage = { role: 'user', content: 'hello' };
  c.prompt = [{ role: 'system', content: 'S' }];
  assert.deepEqual(await collect('MessageProcessor', c, { handoff: { startRun: async (_q, run) => void runs.push(run) } }), []);
  assert.equal((runs[0] as { stream: boolean }).stream, true, 'the HTTP-bot adapter streams');
  assert.deepEqual((runs[0] as { messages: unknown }).messages, [{ role: 'system', content: 'S' }, { role: 'user', content: 'hello' }]);
  const failing = await collect('MessageProcessor', testQuery(), { handoff: { startRun: async () => { throw new Error('bus down'); } } });
  assert.deepEqual([failing[0].type, failing[0].userNotice, failing[0].errorNotice], ['interrupt', 'Request failed.', 'bus down']);
});

test('MessageProcessor: a whole message equal to a keyword asks for a person (width and case ignored) and is acknowledged without a run', async () => {
  const asked: Array<{ via: string; reason: string }> = [];
  const humanRequests = { settings: HumanHandoff.parse({ keywords: ['Human', '人工'], reply: 'Someone will answer.' }), request: async (i: { via: string; reason: string }) => void asked.push(i) };
  const runs: unknown[] = [];
  const handoff = { startRun: async (_q: unknown, run: unknown) => void runs.push(run) };
  for (const text of ['human', ' ＨＵＭＡＮ ', '人工']) {
    const q = testQuery({ chain: [{ type: 'Plain', text }] });
    assert.equal((await collect('MessageProcessor', q, { humanRequests, handoff })).length, 1);
    assert.deepEqual(q.respMessages, [{ kind: 'command', text: 'Someone will answer.' }]);
  }
  assert.deepEqual(asked.map((a) => a.via), ['keyword', 'keyword', 'keyword']);
  assert.equal(asked[1]?.reason, 'ＨＵＭＡＮ');
  const q = testQuery({ chain: [{ type: 'Plain', text: 'are you human?' }] });
  q.userMessage = { role: 'user', content: 'are you human?' };
  await collect('MessageProcessor', q, { humanRequests, handoff });
  assert.equal(runs.length, 1, 'a message that only contains the keyword goes to the model');
  assert.equal(asked.length, 3);
  assert.equal((runs[0] as RunRequest).humanRequestTool, undefined, 'no tool unless the bot offers it');
  const withTool = { ...humanRequests, settings: HumanHandoff.parse({ tool: true }) };
  const t = testQuery({ chain: [{ type: 'Plain', text: 'human' }] });
  t.userMessage = { role: 'user', content: 'human' };
  await collect('MessageProcessor', t, { humanRequests: withTool, handoff });
  assert.equal((runs[1] as RunRequest).humanRequestTool, true, 'the run offers the model request_human; without keywords the word is the model\'s');
  assert.equal(asked.length, 3);
});

test('MessageProcessor: a history over the bus bound (a tool result of 2 MB) is cut to fit, the newest turn kept whole', async () => {
  const runs: RunRequest[] = [];
  const q = testQuery({ chain: [{ type: 'Plain', text: 'and now?' }] });
  q.userMessage = { role: 'user', content: 'and now?' };
  q.prompt = [{ role: 'system', content: 'S' }];
  const toolCall = { id: 'call_1', type: 'function' as const, function: { name: 'lookup', arguments: '{}' } };
  q.messages = [
    { role: 'user', content: 'old question' },
    { role: 'assistant', content: 'old answer' },
    { role: 'user', content: 'use the tool' },
    { role: 'assistant', content: null, tool_calls: [toolCall] },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'r'.repeat(2_000_000) }] },
    { role: 'assistant', content: 'the tool said r' },
  ];
  const results = await collect('MessageProcessor', q, { handoff: { startRun: async (_q, run) => void runs.push(run) } });
  assert.deepEqual(results, [], 'handed off, no failure notice');
  const bytes = Buffer.byteLength(JSON.stringify(runs[0]));
  assert.ok(bytes <= LIMITS.busPayloadBytes, `the run request is ${bytes} bytes`);
  const messages = runs[0].messages;
  assert.equal(messages.length, 8, 'no message left out');
  assert.deepEqual(messages.at(-1), { role: 'user', content: 'and now?' });
  assert.deepEqual(messages.slice(0, 5), [{ role: 'system', content: 'S' }, ...q.messages.slice(0, 4)]);
  const cut = (messages[5].content as { text: string }[])[0].text;
  assert.ok(cut.startsWith('rrrr') && cut.length < 1_048_576, 'the tool result keeps its start');
  assert.match(cut, /characters cut/);
});

test('ResponseWrapper, LongText and SendResponseBack downstream of an item', async () => {
  const sent: OutboundReply[] = [];
  const outbound = { send: async (_r: unknown, reply: OutboundReply) => (sent.push(reply), { delivered: true as const }) };
  const deliver = async (q: PipelineQuery, extra: Partial<PipelineDeps> = {}) => {
    const { deps } = recordingDeps({ outbound, ...extra });
    const names: Name[] = ['ResponseWrapper', 'LongTextProcessStage', 'SendResponseBackStage'];
    await executeFrom(names.map((n) => stage(n, q, deps)), 0, q, deps);
  };
  const cmd = testQuery({ group: true, senderId: 'u7' });
  cmd.respMessages.push({ kind: 'command', text: 'ok' });
  await deliver(cmd);
  assert.deepEqual(sent.pop(), { message: [{ type: 'At', target: 'u7', display: '' }, { type: 'Plain', text: '[bot] ok' }], isFinal: true, stream: false });

  const tools = testQuery({ config: { output: { misc: { 'track-function-calls': true, 'remove-think': true } } } });
  tools.respMessages.push({ kind: 'message', message: { role: 'assistant', content: 'Let me look', tool_calls: [{ id: '1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }, { id: '2', type: 'function', function: { name: 'search', arguments: '{}' } }] } });
  await deliver(tools);
  assert.deepEqual(sent.splice(0).map((s) => s.message), [[{ type: 'Plain', text: 'Let me look' }], [{ type: 'Plain', text: 'Call get_weather.search...' }]]);
  // remove-think is the runner's work (LangBot's wrapper does not touch the text): what it let through is shown as it is.
  const kept = testQuery({ config: { output: { misc: { 'remove-think': true } } } });
  kept.respMessages.push({ kind: 'message', message: { role: 'assistant', content: 'Use  <think> in XML' } });
  await deliver(kept);
  assert.deepEqual(sent.splice(0).map((s) => s.message), [[{ type: 'Plain', text: 'Use  <think> in XML' }]]);
  const toolMsg = testQuery();
  toolMsg.respMessages.push({ kind: 'message', message: { role: 'tool', content: 'x', tool_call_id: '1' } });
  await deliver(toolMsg);
  assert.equal(sent.length, 0, 'tool results are never shown');

  const long = 'x'.repeat(30);
  const cfg = { output: { 'long-text-processing': { strategy: 'forward', threshold: 20 } } };
  const mid = testQuery({ config: cfg });
  mid.respMessages.push({ kind: 'chunk', text: long, isFinal: false, hasToolCalls: false, toolNames: [] });
  await deliver(mid);
  assert.equal(sent.length, 0, 'an over-threshold chunk is held back');
  const fin = testQuery({ config: cfg });
  fin.respMessages.push({ kind: 'chunk', text: long, isFinal: true, hasToolCalls: false, toolNames: [] });
  await deliver(fin);
  const reply = sent.pop()!;
  assert.equal(reply.message[0].type, 'Forward');
  assert.deepEqual([reply.isFinal, reply.stream], [true, true]);

  const delayed = testQuery({ config: { output: { 'force-delay': { min: 1, max: 3 } } } });
  delayed.respMessages.push({ kind: 'chunk', text: 'part', isFinal: true, hasToolCalls: true, toolNames: ['f'] });
  const slept: number[] = [];
  await deliver(delayed, { random: () => 0.5, sleep: async (ms) => void slept.push(ms) });
  assert.deepEqual(slept, [2000]);
  assert.deepEqual(sent.pop(), { message: [{ type: 'Plain', text: 'part' }], isFinal: false, stream: true }, 'a chunk ending a tool round is not final');

  const failing = testQuery();
  failing.respMessages.push({ kind: 'command', text: 'x' });
  await assert.rejects(deliver(failing, { outbound: { send: async () => ({ delivered: false as const, reason: 'nope' }) } }), /nope/);
});

test('LongText image: one raw-base64 Image over the threshold, rendered once per streamed reply', async () => {
  const cfg = (extra: Record<string, unknown> = {}) => ({ output: { 'long-text-processing': { strategy: 'image', threshold: 20, ...extra } } });
  const withReply = (q: PipelineQuery, text: string, item?: PipelineQuery['respMessages'][number]) => {
    if (item) q.respMessages.push(item);
    q.respMessageChain.push([{ type: 'Plain', text }]);
    return q;
  };
  const long = '这是一段超过阈值的长回复，会被渲染成图片。';

  const real = withReply(testQuery({ config: cfg() }), long);
  assert.equal((await run('LongTextProcessStage', real)).type, 'continue');
  const chain = real.respMessageChain.at(-1)!;
  assert.equal(chain.length, 1);
  const img = chain[0];
  assert.ok(img.type === 'Image');
  assert.deepEqual([img.image_id, img.url, img.path], ['', '', '']);
  assert.ok(!img.base64.startsWith('data:'), 'raw base64, as LangBot');
  const png = Buffer.from(img.base64, 'base64');
  assert.deepEqual(png.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  assert.equal(png.readUInt32BE(16), 800);

  const short = withReply(testQuery({ config: cfg() }), 'short reply');
  await run('LongTextProcessStage', short);
  assert.deepEqual(short.respMessageChain, [[{ type: 'Plain', text: 'short reply' }]], 'a short reply is left alone');

  const calls: Array<[string, string]> = [];
  const renderer = { render: async (text: string, fontPath: string) => (calls.push([text, fontPath]), 'UE5H') };
  const chunk = (isFinal: boolean, hasToolCalls = false) => ({ kind: 'chunk' as const, text: long, isFinal, hasToolCalls, toolNames: [] });
  const mid = withReply(testQuery({ config: cfg() }), long, chunk(false));
  assert.deepEqual(await run('LongTextProcessStage', mid, { renderer }), { type: 'interrupt' }, 'a non-final chunk over the threshold is held back');
  const round = withReply(testQuery({ config: cfg() }), long, chunk(true, true));
  assert.deepEqual(await run('LongTextProcessStage', round, { renderer }), { type: 'interrupt' }, 'a chunk ending a tool round is not the last');
  assert.equal(calls.length, 0, 'nothing rendered before the final chunk');
  const fin = withReply(testQuery({ config: cfg() }), long, chunk(true));
  assert.equal((await run('LongTextProcessStage', fin, { renderer })).type, 'continue');
  assert.deepEqual(calls, [[long, '']], 'rendered once, at the final chunk, with the packaged font');
  assert.deepEqual(fin.respMessageChain.at(-1), [{ type: 'Image', image_id: '', url: '', path: '', base64: 'UE5H' }]);

  const over = withReply(testQuery({ config: cfg() }), long);
  await run('LongTextProcessStage', over, { renderer: { render: async () => null } });
  assert.equal(over.respMessageChain.at(-1)![0].type, 'Forward', 'past the renderer limits: forward');

  calls.length = 0;
  const missing = withReply(testQuery({ config: cfg({ 'font-path': '/nonexistent/font.ttf' }) }), long);
  await run('LongTextProcessStage', missing, { renderer });
  assert.equal(missing.respMessageChain.at(-1)![0].type, 'Forward', 'a missing font-path switches to forward');
  assert.equal(calls.length, 0);

  const fontPath = fileURLToPath(import.meta.url);
  const custom = withReply(testQuery({ config: cfg({ 'font-path': fontPath }) }), long);
  await run('LongTextProcessStage', custom, { renderer });
  assert.deepEqual(calls, [[long, fontPath]], 'an existing font-path goes to the renderer');
});
