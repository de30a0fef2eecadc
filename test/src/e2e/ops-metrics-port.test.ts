import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { freePort } from '../harness/ports.js';
import { waitUntil } from '../harness/wait.js';

/**
 * With `METRICS_PORT`, health and metrics leave the service port: a public webhook port then
 * exposes only webhooks, and probes and scrapes reach the operations port.
 */
describe('health and metrics on a port of their own', () => {
  let sys: TestSystem;
  let metricsPort: number;

  before(async () => {
    metricsPort = await freePort();
    sys = await startTestSystem({ startServices: false });
    await Promise.all([
      sys.services.start('ingress', { METRICS_PORT: String(metricsPort) }),
      sys.services.start('orchestrator'),
      sys.services.start('runner'),
      sys.services.start('dispatcher'),
    ]);
  });

  after(async () => {
    await sys?.stop();
  });

  test('the operations port answers health and metrics; the service port answers neither and still takes messages', async () => {
    const ingress = sys.services.get('ingress');
    assert.equal(ingress.healthUrl, `http://127.0.0.1:${metricsPort}`);
    assert.equal((await fetch(`${ingress.healthUrl}/health/live`)).status, 200);
    assert.equal((await fetch(`${ingress.healthUrl}/health/ready`)).status, 200);
    for (const route of ['/health/live', '/health/ready', '/metrics']) {
      assert.equal((await fetch(`${ingress.url}${route}`)).status, 404, `${route} on the service port`);
    }

    const res = await sys.post({ session_id: 'ops-1', message: [{ type: 'Plain', text: 'hello' }] });
    assert.equal(res.status, 202);
    const accepted = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === accepted), 60_000);

    const metrics = await waitUntil('the accepted message counted on the operations port', async () => {
      const text = await (await fetch(`${ingress.healthUrl}/metrics`)).text();
      return /conveyor_ingress_messages_total\{[^}]*outcome="accepted"[^}]*\} [1-9]/.test(text) ? text : undefined;
    }, 15_000, 250);
    assert.match(metrics, /# TYPE conveyor_ingress_messages_total counter/);
  });
});
