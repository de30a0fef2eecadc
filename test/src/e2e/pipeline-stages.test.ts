import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPrismaClient } from '@conveyor/persistence';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
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

  test('a group message no rule matches is dropped at once, not after the reply the group is waiting for', async () => {
    const prisma = createPrismaClient(sys.db.url);
    const echo = (body: { messages?: { content?: unknown }[] }) => ({ text: `echo: ${body.messages?.at(-1)?.content}` });
    // The group's question is answered by a stream the model holds open until released: its session stays held.
    let deltasWritten = 0;
    const held = { text: 'done at last', tickMs: 50, holdOpen: true, onDelta: (index: number) => void (deltasWritten = index) };
    sys.llm.setDefault((body) => (String(body.messages?.at(-1)?.content).includes('take your time') ? held : echo(body)));
    try {
      const room = { session_id: 'room-busy', session_type: 'group', sender: { id: 'member-8', name: 'Eve' } };
      const slow = await send(sys, { ...room, message: [{ type: 'Plain', text: 'ai take your time' }] });
      await waitUntil('the group\'s question at the model', () => sys.llm.requests.some((r) => String(r.body.messages?.at(-1)?.content).includes('take your time')), 30_000);
      const chatter = await send(sys, { ...room, message: [{ type: 'Plain', text: 'just chatting meanwhile' }] });
      // Its query ends (the respond rules drop it) while the reply it would have queued behind is still open.
      await waitUntil('the chatter dropped', async () => {
        const rows = await prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId: 'room-busy' } });
        return rows.length === 2 && rows.filter((r) => r.status === 'succeeded').length === 1;
      }, 30_000);
      assert.equal(callbacksFor(sys, slow).some((c) => c.json?.is_final === true), false, 'the group\'s reply is still open');
      // Released once its whole text is out (a release ends the stream where it stands).
      await waitUntil('the held answer written', () => deltasWritten === 3, 30_000);
      sys.llm.release();
      assert.deepEqual((await finalReply(sys, slow)).json.message.at(-1), { type: 'Plain', text: 'done at last' });
      assert.equal(callbacksFor(sys, chatter).length, 0, 'the dropped message gets no reply');
    } finally {
      sys.llm.setDefault(echo);
      await prisma.$disconnect();
    }
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
