import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { AdminClient, startAdmin } from './admin-support.js';

/**
 * The query log says whether a query's trace was sampled (OTEL_TRACES_SAMPLER_ARG, the ratio the
 * deployments set), so the console links only traces the backend has. The ingress starts the trace;
 * the services after it follow its decision (parentbased).
 */
for (const ratio of [0, 1]) {
  describe(`query log trace sampling at ratio ${ratio}`, () => {
    let sys: TestSystem;
    let admin: RunningService;
    let api: AdminClient;

    before(async () => {
      sys = await startTestSystem({ serviceEnv: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio) } });
      admin = await startAdmin(sys);
      api = new AdminClient(admin.url);
      await api.login();
    });

    after(async () => {
      await sys?.stop();
    });

    test(`a query's entry has its trace id and sampled ${ratio === 1}`, async () => {
      sys.llm.setDefault({ text: 'traced answer' });
      const res = await sys.post({ session_id: `trace-${randomUUID()}`, message: [{ type: 'Plain', text: 'hi' }] }, { subPath: 'sync' });
      assert.equal(res.status, 200);
      let entry: { traceId: string | null; traceSampled: boolean | null; status: string } | undefined;
      await waitUntil('the query to be logged as finished', async () => {
        const listed = await api.call('GET', `/queries?botId=${sys.botId}&limit=1`);
        entry = listed.body.items[0];
        return entry?.status === 'succeeded';
      }, 30_000, 250);
      assert.match(entry!.traceId ?? '', /^[0-9a-f]{32}$/, 'an id either way: log lines carry it');
      assert.equal(entry!.traceSampled, ratio === 1);
      if (ratio === 1) {
        await waitUntil('the trace to reach the OTLP receiver', async () => sys.otlp.spans.some((s) => s.traceId === entry!.traceId), 30_000, 250);
      }
    });
  });
}
