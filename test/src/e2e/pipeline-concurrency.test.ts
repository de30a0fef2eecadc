import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sign } from '@conveyor/http-bot';
import { createPrismaClient } from '@conveyor/persistence';
import { DEFAULT_PIPELINE_STAGES } from '@conveyor/pipeline';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { callbacksFor, finalReply, send, sleep, text } from './pipeline-support.js';

/**
 * Two orchestrator replicas share rate-limit windows and session order through Redis; a bad pipeline
 * config rejects only its own bot's messages.
 */
describe('pipeline concurrency across orchestrator replicas', () => {
  let sys: TestSystem;
  let prisma: ReturnType<typeof createPrismaClient>;
  const requestTimes: Array<{ at: number; last: string }> = [];

  /** A second bot on its own pipeline, next to the harness's. */
  async function addBot(pipelineId: string, stages: unknown, config: unknown): Promise<string> {
    const main = await prisma.bot.findUniqueOrThrow({ where: { id: sys.botId } });
    await prisma.pipeline.create({ data: { id: pipelineId, name: pipelineId, stages: stages as never, config: config as never } });
    const id = randomUUID();
    await prisma.bot.create({ data: { id, name: pipelineId, adapter: 'http-bot', adapterConfig: main.adapterConfig as never, pipelineId } });
    return id;
  }

  async function sendTo(botId: string, body: unknown): Promise<string> {
    const raw = JSON.stringify(body);
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await fetch(`${sys.services.get('ingress').url}/bots/${botId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(sys.inboundSecret, ts, raw) },
      body: raw,
    });
    assert.equal(res.status, 202);
    return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
  }

  before(async () => {
    sys = await startTestSystem({
      startServices: false,
      pipelineConfig: { safety: { 'rate-limit': { limitation: 3, 'window-length': 60, strategy: 'drop' } } },
    });
    for (const name of ['ingress', 'runner', 'dispatcher'] as const) await sys.services.start(name);
    await sys.services.start('orchestrator', {}, 'orchestrator-a' as never);
    await sys.services.start('orchestrator', {}, 'orchestrator-b' as never);
    prisma = createPrismaClient(sys.db.url);
    sys.llm.setDefault((body) => {
      const last = String(body.messages?.at(-1)?.content);
      requestTimes.push({ at: Date.now(), last });
      return { text: `re: ${last}`, delayFirstTokenMs: 150 };
    });
  });
  after(async () => {
    await prisma?.$disconnect();
    await sys?.stop();
  });

  /**
   * Windows are aligned to the epoch (60 s here): messages sent in the last seconds of one could be
   * counted in two, and the one over the limit would be allowed. Waits until at least 20 s of the
   * current window are left, which every burst below needs far less than.
   */
  const roomInRateWindow = () => waitUntil('20 s left in the rate-limit window', () => Date.now() % 60_000 <= 40_000, 30_000, 100);

  test('rate limit drop: the fourth message in the window gets LangBot\'s notice, whichever replica takes it', async () => {
    await roomInRateWindow();
    const ids: string[] = [];
    for (let i = 1; i <= 4; i++) ids.push(await send(sys, text('rl-drop', `m${i}`)));
    const replies = await Promise.all(ids.map((id) => finalReply(sys, id)));
    assert.deepEqual(replies.map((r) => r.json.message[0].text), ['re: m1', 're: m2', 're: m3', '请求数超过限速器设定值，已丢弃本消息。']);
  });

  test('rate limit: group messages not addressed to the bot never spend the chat\'s window (admission counts, and gives back)', async () => {
    const group = (text: string) => ({ session_id: 'rl-group', session_type: 'group', sender: { id: 'member-1', name: 'M1' }, message: [{ type: 'Plain', text }] });
    const ids: string[] = [];
    await roomInRateWindow();
    // Chatter first, in the same session: each of these runs (and ends) before the addressed ones.
    for (let i = 1; i <= 4; i++) await send(sys, group(`chatter ${i}`));
    for (let i = 1; i <= 4; i++) ids.push(await send(sys, group(`ai g${i}`)));
    const replies = await Promise.all(ids.map((id) => finalReply(sys, id)));
    // A group reply may start with an At of the sender; the text is its Plain part.
    const plain = (r: (typeof replies)[number]) => (r.json.message as Array<{ type: string; text?: string }>).filter((c) => c.type === 'Plain').map((c) => c.text).join('');
    assert.deepEqual(replies.map(plain), ['re: g1', 're: g2', 're: g3', '请求数超过限速器设定值，已丢弃本消息。']);
    assert.equal(sys.llm.requests.filter((r) => String(r.body.messages?.at(-1)?.content).startsWith('chatter')).length, 0, 'the chatter was never answered');
  });

  test('per-session order: concurrent senders in two sessions get replies in arrival order, never interleaved', async () => {
    const sessions = ['order-a', 'order-b'];
    const sent: Record<string, string[]> = { 'order-a': [], 'order-b': [] };
    // Arrival order is the order the ingress accepted them; the sessions' posts interleave.
    for (let i = 1; i <= 3; i++) {
      for (const s of sessions) {
        sent[s].push(await send(sys, { session_id: s, session_type: 'group', sender: { id: `member-${i}`, name: `M${i}` }, message: [{ type: 'Plain', text: `ai ${s}-${i}` }] }));
      }
    }
    for (const s of sessions) {
      await Promise.all(sent[s].map((id) => finalReply(sys, id)));
      const order = sys.callbacks.received.filter((c) => c.json?.session_id === s).map((c) => c.json.reply_to as string);
      const firstIndex = sent[s].map((id) => order.indexOf(id));
      const lastIndex = sent[s].map((id) => order.lastIndexOf(id));
      assert.deepEqual([...firstIndex].sort((a, b) => a - b), firstIndex, `${s}: replies start in arrival order`);
      for (let i = 1; i < sent[s].length; i++) assert.ok(lastIndex[i - 1] < firstIndex[i], `${s}: reply ${i} ends before reply ${i + 1} starts`);
      // Serial: each turn's request already carried the previous turn's answer.
      const req = sys.llm.requests.filter((r) => String(r.body.messages?.at(-1)?.content) === `${s}-3`).at(-1)!;
      assert.deepEqual(req.body.messages!.filter((m) => m.role !== 'system').map((m) => m.content), [`${s}-1`, `re: ${s}-1`, `${s}-2`, `re: ${s}-2`, `${s}-3`]);
    }
    const logs = sys.services.allLogs();
    assert.ok(logs.includes('orchestrator-a|') && logs.includes('orchestrator-b|'));
  });

  test('rate limit wait: the over-limit message waits for the next window instead of being dropped', async () => {
    const waitBot = await addBot(`wait-${randomUUID().slice(0, 8)}`, DEFAULT_PIPELINE_STAGES, {
      ai: { 'local-agent': { model: { primary: 'fake', fallbacks: [] } } },
      safety: { 'rate-limit': { limitation: 1, 'window-length': 3, strategy: 'wait' } },
    });
    // Windows are aligned to the epoch. Sent early in one, the first message is allowed in that window
    // or a later one, so the second can only be allowed from the next window on; judged by when the
    // model saw each, not by which windows those times fall in (the first may reach the model just
    // after a boundary on a loaded machine).
    await waitUntil('the start of a rate-limit window', () => Date.now() % 3000 < 300, 10_000, 10);
    const sentIn = Math.floor(Date.now() / 3000);
    const a = await sendTo(waitBot, text('rl-wait', 'w1'));
    const b = await sendTo(waitBot, text('rl-wait', 'w2'));
    const [ra, rb] = [await finalReply(sys, a), await finalReply(sys, b, 60_000)];
    assert.deepEqual([ra.json.message[0].text, rb.json.message[0].text], ['re: w1', 're: w2']);
    const t2 = requestTimes.find((r) => r.last === 'w2')!.at;
    assert.ok(t2 >= (sentIn + 1) * 3000, `the second request waited for a later window (sent in window ${sentIn}, ran at ${t2})`);
  });

  test('an invalid pipeline config rejects its bot\'s messages with the key path; another pipeline keeps serving', async () => {
    const badBot = await addBot(`bad-${randomUUID().slice(0, 8)}`, DEFAULT_PIPELINE_STAGES, { safety: { 'rate-limit': { limitation: 'lots' } } });
    const rejected = await sendTo(badBot, text('bad-1', 'hello'));
    const served = await send(sys, text('good-1', 'hello'));
    assert.equal((await finalReply(sys, served)).json.message[0].text, 're: hello');
    const record = await waitUntil('rejected query failed', async () => {
      const row = await prisma.queryRecord.findFirst({ where: { botId: badBot } });
      return row?.status === 'failed' ? row : undefined;
    }, 20_000);
    assert.match(record.error ?? '', /config\.safety\.rate-limit\.limitation/);
    await sleep(300);
    assert.equal(callbacksFor(sys, rejected).length, 0);
  });
});
