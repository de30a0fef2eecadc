import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { callbacksFor, finalReply, send, sleep, text } from './pipeline-support.js';

/**
 * The stages before and after the runner, through the HTTP-bot ingress and the four services: group
 * rules, access control, ignore rules, ban words in and out, history, commands.
 */
describe('pipeline stages end to end', () => {
  let sys: TestSystem;

  before(async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'conveyor-banwords-'));
    const banWords = path.join(dir, 'sensitive-words.json');
    await writeFile(banWords, JSON.stringify({ mask: '*', mask_word: '', words: ['forbidden\\w*', '坏蛋'] }));
    sys = await startTestSystem({
      pipelineConfig: {
        trigger: { 'ignore-rules': { prefix: ['#'], regexp: ['^ignore me'] }, 'access-control': { mode: 'blacklist', blacklist: ['person_blocked'] } },
        ai: { 'local-agent': { prompt: [{ role: 'system', content: 'You are the pipeline bot.' }] } },
      },
      serviceEnv: { CONVEYOR_BAN_WORDS_FILE: banWords },
    });
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
  });
  after(async () => {
    await sys?.stop();
  });

  test('group rules: no rule, no reply; the ai prefix or an at-mention answers with the sender mentioned', async () => {
    const group = (t: string | object[]) => ({ session_id: 'room-1', session_type: 'group', sender: { id: 'member-7', name: 'Bob' }, message: typeof t === 'string' ? [{ type: 'Plain', text: t }] : t });
    const ignored = await send(sys, group('just chatting'));
    const prefixed = await send(sys, group('ai what time is it'));
    const reply = await finalReply(sys, prefixed);
    assert.deepEqual(reply.json.message, [{ type: 'At', target: 'member-7', display: '' }, { type: 'Plain', text: 'echo: what time is it' }]);
    const mentioned = await send(sys, group([{ type: 'At', target: 'http_bot' }, { type: 'Plain', text: ' ping' }]));
    assert.deepEqual((await finalReply(sys, mentioned)).json.message.at(-1), { type: 'Plain', text: 'echo: ping' });
    assert.equal(callbacksFor(sys, ignored).length, 0, 'an unmatched group message is ignored silently');
  });

  test('access control and ignore rules drop silently; the model is not called', async () => {
    const before = sys.llm.requests.length;
    const blocked = await send(sys, text('blocked', 'hello'));
    const hashed = await send(sys, text('p-ign', '#note to self'));
    const regex = await send(sys, text('p-ign', 'ignore me please'));
    const ok = await send(sys, text('p-ign', 'answer me'));
    await finalReply(sys, ok);
    await sleep(500);
    for (const id of [blocked, hashed, regex]) assert.equal(callbacksFor(sys, id).length, 0);
    assert.equal(sys.llm.requests.length, before + 1);
  });

  test('a banned word in the message gets LangBot\'s notice; one in the reply is masked', async () => {
    const incoming = await send(sys, text('p-ban', 'you are a 坏蛋'));
    const notice = await finalReply(sys, incoming);
    assert.deepEqual(notice.json.message, [{ type: 'Plain', text: '消息中存在不合适的内容, 请修改' }]);
    sys.llm.setDefault({ text: 'this is forbiddenstuff indeed' });
    const outgoing = await send(sys, text('p-ban', 'say something'));
    assert.deepEqual((await finalReply(sys, outgoing)).json.message, [{ type: 'Plain', text: 'this is ************** indeed' }]);
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
  });

  test('history carries across turns with the date paragraph only in the prompt; !reset starts over; unknown commands answer', async () => {
    await finalReply(sys, await send(sys, text('p-hist', 'first')));
    await finalReply(sys, await send(sys, text('p-hist', 'second')));
    const second = sys.llm.requests.at(-1)!.body.messages!;
    assert.match(String(second[0].content), /^You are the pipeline bot\.\n\nCurrent date: \d{4}-\d\d-\d\d \(\w+day\)\./);
    assert.equal(String(second[0].content).match(/Current date/g)?.length, 1);
    assert.deepEqual(second.slice(1).map((m) => `${m.role}:${m.content}`), ['user:first', 'assistant:echo: first', 'user:second']);

    const reset = await finalReply(sys, await send(sys, text('p-hist', '!reset')));
    assert.deepEqual(reset.json.message, [{ type: 'Plain', text: '[bot] 会话已重置' }]);
    await finalReply(sys, await send(sys, text('p-hist', 'third')));
    assert.deepEqual(sys.llm.requests.at(-1)!.body.messages!.slice(1).map((m) => `${m.role}:${m.content}`), ['user:third']);

    const unknown = await finalReply(sys, await send(sys, text('p-hist', '！frobnicate now')));
    assert.deepEqual(unknown.json.message, [{ type: 'Plain', text: '[bot] 未知命令: frobnicate' }]);
  });
});
