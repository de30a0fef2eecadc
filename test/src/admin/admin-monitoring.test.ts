import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { AdminClient, startAdmin } from './admin-support.js';

/**
 * Monitoring computed by the admin service from the query log: a message through the system leaves
 * its model, tokens, cost and stage timings on its record, and the summary, error log, sessions,
 * CSV export and timeline read them back.
 */
describe('admin API: monitoring', () => {
  let sys: TestSystem;
  let api: AdminClient;
  let pool: pg.Pool;
  let answered: string;
  const failedId = randomUUID();

  before(async () => {
    sys = await startTestSystem();
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
    api = new AdminClient((await startAdmin(sys)).url);
    await api.login();
    pool = new pg.Pool({ connectionString: sys.db.url, max: 2 });
    const model = await api.call('GET', '/models/fake');
    const priced = await api.call('PATCH', '/models/fake', { inputPricePerMTok: 1000, outputPricePerMTok: 2000 }, { 'if-match': String(model.body.version) });
    assert.equal(priced.status, 200, JSON.stringify(priced.body));
    assert.deepEqual([priced.body.inputPricePerMTok, priced.body.outputPricePerMTok], [1000, 2000]);
    // The runner reads the model's prices when its cache drops it (the config event the PATCH published).
    await waitUntil('the runner to cost a run at the new prices', async () => {
      const chat = `mon-${randomUUID()}`;
      await finalReply(sys, await send(sys, text(chat, 'warm up')));
      return ((await finishedQuery(chat)).cost ?? 0) > 0;
    }, 60_000, 500);
    await finalReply(sys, await send(sys, text('mon-chat', 'how are you')));
    answered = (await finishedQuery('mon-chat')).id;
    await pool.query(
      `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "status", "receivedAt", "finishedAt", "error", "model", "runner")
       VALUES ($1, 'e2e-bot', 'default', 'person', 'mon-broken', 'failed', now() - interval '1 minute', now(), 'all 1 models failed: 500 boom', 'fake', 'local-agent')`,
      [failedId],
    );
  });
  /** The chat's newest query once the runner wrote its end (the history append carries its usage). */
  async function finishedQuery(launcherId: string) {
    return waitUntil(`the query of ${launcherId} to finish`, async () => {
      const got = await api.call('GET', `/queries?launcherId=${encodeURIComponent(launcherId)}&limit=1`);
      const q = got.body.items?.[0];
      return q?.status === 'succeeded' ? q : undefined;
    }, 30_000, 100);
  }
  after(async () => {
    await pool?.end();
    await sys?.stop();
  });

  test('the answered query carries its model, runner, tokens, cost and a timeline of its stages and run', async () => {
    const q = await waitUntil('the run\'s usage on the record', async () => {
      const got = await api.call('GET', `/queries/${answered}`);
      return got.body.modelCalls ? got.body : undefined;
    }, 30_000, 200);
    assert.equal(q.model, 'fake');
    assert.equal(q.runner, 'local-agent');
    assert.equal(q.modelCalls, 1);
    assert.ok(q.inputTokens > 0 && q.outputTokens > 0);
    assert.ok(Math.abs(q.cost - (q.inputTokens * 1000 + q.outputTokens * 2000) / 1e6) < 1e-9);
    const timeline = await waitUntil('the orchestrator\'s stages on the record', async () => {
      const got = await api.call('GET', `/queries/${answered}/timeline`);
      const steps: { stage: string }[] = got.body.steps;
      return steps.some((s) => s.stage === 'run local-agent') && steps.some((s) => s.stage.startsWith('deliver ')) && steps.length > 3 ? got.body : undefined;
    }, 30_000, 200);
    const stages: string[] = timeline.steps.map((s: { stage: string }) => s.stage);
    assert.equal(stages[0], 'queued');
    assert.ok(stages.includes('MessageProcessor'), stages.join());
    // The dispatcher's delivery of the reply: one step, once, after the run started.
    const delivery = timeline.steps.filter((s: { stage: string }) => s.stage.startsWith('deliver '));
    assert.equal(delivery.length, 1, stages.join());
    const run = timeline.steps.find((s: { stage: string }) => s.stage === 'run local-agent');
    assert.ok(delivery[0].offsetMs >= run.offsetMs, JSON.stringify(timeline.steps));
    assert.ok(timeline.steps.every((s: { offsetMs: number; ms: number }) => s.ms >= 0 && s.offsetMs >= -1_000));
  });

  test('the summary counts messages, failures, tokens and cost per bot, pipeline and model, with a bucket per minute', async () => {
    const got = await api.call('GET', '/monitoring/summary?range=1h');
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const s = got.body;
    assert.equal(s.bucketSeconds, 60);
    assert.ok(s.series.length >= 60 && s.series.length <= 61);
    assert.ok(s.totals.messages >= 3 && s.totals.failed >= 1);
    const fake = s.byModel.find((g: { key: string }) => g.key === 'fake');
    assert.ok(fake && fake.inputTokens > 0 && fake.cost > 0 && fake.failed >= 1, JSON.stringify(s.byModel));
    assert.ok(s.byBot.length > 0 && s.byBot[0].messages > 0);
    assert.ok(s.byPipeline.some((g: { key: string }) => g.key === 'default'));
    assert.equal(s.series.reduce((n: number, b: { messages: number }) => n + b.messages, 0), s.totals.messages);
    const filtered = await api.call('GET', '/monitoring/summary?range=24h&model=nothing-like-it');
    assert.equal(filtered.body.totals.messages, 0);
    assert.equal(filtered.body.bucketSeconds, 3600);
    const custom = await api.call('GET', `/monitoring/summary?range=custom&from=${new Date(Date.now() - 7_200_000).toISOString()}&to=${new Date().toISOString()}`);
    assert.equal(custom.status, 200);
    assert.ok(custom.body.totals.messages >= 3);
    const backwards = await api.call('GET', `/monitoring/summary?range=custom&from=${new Date().toISOString()}&to=${new Date(Date.now() - 1000).toISOString()}`);
    assert.equal(backwards.status, 400);
    const anonymous = await fetch(`${api.baseUrl}/api/v1/monitoring/summary`);
    assert.equal(anonymous.status, 401);
  });

  test('the error log pages the failed queries with their reasons', async () => {
    const got = await api.call('GET', '/monitoring/errors?range=1h&limit=1');
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.items.length, 1);
    const all = await api.call('GET', '/monitoring/errors?range=1h');
    const broken = all.body.items.find((q: { id: string }) => q.id === failedId);
    assert.equal(broken?.error, 'all 1 models failed: 500 boom');
    assert.ok(all.body.items.every((q: { status: string }) => q.status === 'failed'));
  });

  test('sessions list the chats; their messages show text only once the operator allows it', async () => {
    const sessions = await api.call('GET', '/monitoring/sessions?range=24h');
    assert.equal(sessions.status, 200, JSON.stringify(sessions.body));
    const chat = sessions.body.items.find((s: { launcherId: string }) => s.launcherId === 'mon-chat');
    assert.ok(chat && chat.messages >= 2, JSON.stringify(sessions.body.items));
    const path = `/monitoring/sessions/conversations?botId=${encodeURIComponent(chat.botId)}&launcherType=${chat.launcherType}&launcherId=mon-chat`;
    const hidden = await api.call('GET', path);
    assert.equal(hidden.body.textShown, false);
    const messages = hidden.body.conversations[0].messages;
    assert.deepEqual(messages.map((m: { role: string }) => m.role), ['user', 'assistant']);
    assert.ok(messages.every((m: { text: string | null; chars: number }) => m.text === null && m.chars > 0));

    const current = await api.call('GET', '/settings');
    const put = await api.call('PUT', '/settings', { ...withoutMeta(current.body), monitoring: { showMessageText: true } }, { 'if-match': String(current.body.version) });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const shown = await api.call('GET', path);
    assert.equal(shown.body.textShown, true);
    assert.deepEqual(shown.body.conversations[0].messages.map((m: { text: string }) => m.text), ['how are you', 'echo: how are you']);
    const audit = await api.call('GET', '/audit?resource=settings');
    assert.ok(audit.body.items[0].changes.includes('monitoring.showMessageText'));
    const off = await api.call('PUT', '/settings', { ...withoutMeta(put.body), monitoring: { showMessageText: null } }, { 'if-match': String(put.body.version) });
    assert.equal(off.status, 200);
  });

  test('the CSV export holds the range\'s queries with their usage; the OpenAPI document has the routes', async () => {
    const res = await fetch(`${api.baseUrl}/api/v1/monitoring/queries.csv?range=1h`, { headers: { cookie: api.sessionCookie() ?? '' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(res.headers.get('content-disposition') ?? '', /attachment; filename="queries-1h.csv"/);
    const lines = (await res.text()).trim().split('\r\n');
    assert.equal(lines[0], 'id,receivedAt,finishedAt,status,botId,pipelineId,launcherType,launcherId,model,runner,modelCalls,inputTokens,outputTokens,cost,durationMs,error');
    const row = lines.find((l) => l.startsWith(`${answered},`));
    assert.ok(row?.includes(',succeeded,') && row.includes(',fake,local-agent,1,'), row);
    assert.ok(lines.some((l) => l.startsWith(failedId) && l.endsWith('all 1 models failed: 500 boom')));
    const bad = await fetch(`${api.baseUrl}/api/v1/monitoring/queries.csv?range=custom`, { headers: { cookie: api.sessionCookie() ?? '' } });
    assert.equal(bad.status, 400);
    const doc = (await (await fetch(`${api.baseUrl}/api/docs-json`)).json()) as { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }>> };
    for (const p of ['/monitoring/summary', '/monitoring/errors', '/monitoring/sessions', '/monitoring/sessions/conversations', '/monitoring/queries.csv', '/queries/{id}/timeline']) {
      assert.ok(doc.paths[`/api/v1${p}`]?.get, `${p} in the OpenAPI document`);
    }
    assert.ok(doc.paths['/api/v1/monitoring/queries.csv']?.get?.responses?.['200']?.content?.['text/csv']);
  });
});

function withoutMeta(settings: Record<string, unknown>): Record<string, unknown> {
  const { version: _version, updatedAt: _updatedAt, ...values } = settings;
  return values;
}
