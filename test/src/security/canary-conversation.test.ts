import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { connectBus } from '@conveyor/bus';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { AdminClient, startAdmin } from '../admin/admin-support.js';

/**
 * A whole conversation with a canary in every secret a deployment holds: the bot's inbound secret,
 * the model's API key, the NATS passwords of every role, the admin's password, the key that encrypts
 * API keys at rest and the web chat token. After answered messages, a failed model call, a dead
 * letter and the admin reading everything, no log line of any service, no exported span, no metric
 * and no dead letter holds any of them.
 */
describe('secrets stay out of logs, spans, metrics and dead letters', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  const canary = `cnry${randomBytes(6).toString('hex')}`;
  const adminPassword = `${canary}-admin-password`;
  const secretKey = randomBytes(32).toString('base64');
  const webChatToken = `${canary}-webchat-token-0123456789abcdef`;
  let secrets: string[] = [];

  before(async () => {
    sys = await startTestSystem({ natsPermissions: true, serviceEnv: { LOG_LEVEL: 'debug', WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken, CONVEYOR_SECRET_KEY: secretKey } });
    admin = await startAdmin(sys, { ...(await sys.securedNats!.credentialsEnv('admin')), CONVEYOR_ADMIN_PASSWORD: adminPassword, CONVEYOR_SECRET_KEY: secretKey, WEBCHAT_TOKEN: webChatToken, LOG_LEVEL: 'debug' });
    api = new AdminClient(admin.url);
    await api.login('admin', adminPassword);
    secrets = [sys.inboundSecret, 'e2e-llm-key', adminPassword, secretKey, webChatToken, ...Object.values(sys.securedNats!.passwords)];
  });
  after(async () => {
    await sys?.stop();
  });

  test('a conversation, a failure and a dead letter leave no secret anywhere they are recorded', async () => {
    // Answered messages, the second on the same session (history read back).
    sys.llm.setDefault({ text: 'Canary answer' });
    for (const text of ['first', 'second']) {
      const res = await sys.post({ session_id: 'canary', sender: { id: 'u1', name: 'Canary' }, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202, await res.clone().text());
      const { data } = (await res.json()) as { data: { accepted_message_id: string } };
      await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id && c.json?.is_final), 60_000);
    }
    // A failed model call: the provider's error reaches the failure path, the logs and the span.
    sys.llm.script({ error: { status: 401, message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } });
    const failed = await sys.post({ session_id: 'canary-fail', sender: { id: 'u2', name: 'Canary' }, message: [{ type: 'Plain', text: 'fail' }] });
    assert.equal(failed.status, 202);
    const { data: failedData } = (await failed.json()) as { data: { accepted_message_id: string } };
    await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === failedData.accepted_message_id && c.json?.is_final), 60_000);
    // A dead letter: a payload no consumer can read, published as an operator would.
    const ops = await connectBus({ url: sys.securedNats!.url, name: 'canary-ops', env: await sys.securedNats!.credentialsEnv('ops') });
    try {
      await jetstream(ops).publish(sys.topology.subjects.query(sys.botId), '{"not":"a query"}', { msgID: `canary-dl-${canary}` });
    } finally {
      await ops.close();
    }
    const deadLetters = await waitUntil('the dead letter', async () => {
      const answer = await api.call('GET', '/dead-letters');
      return answer.status === 200 && answer.body.items.length > 0 ? answer : undefined;
    }, 60_000, 500);

    // Everything the system recorded: the admin's answers, every service's log, spans, metrics, dead letters.
    const answers = [deadLetters.body, ...(await Promise.all(['/bots', '/models', '/pipelines', '/audit', '/query-log', `/bots/${sys.botId}`].map((p) => api.call('GET', p)))).map((a) => a.body)];
    const metrics = await Promise.all([...sys.services.services].map((s) => fetch(`${s.healthUrl}/metrics`).then((r) => r.text())));
    await waitUntil('spans of every service', () => new Set(sys.otlp.spans.map((s) => s.serviceName)).size >= 4, 30_000);
    const recorded: Record<string, string> = {
      'admin API answers': JSON.stringify(answers),
      'service logs': sys.services.services.map((s) => s.logs.join('\n')).join('\n'),
      'exported spans': JSON.stringify(sys.otlp.spans),
      metrics: metrics.join('\n'),
    };
    assert.ok(recorded['service logs']!.length > 10_000, 'debug logs were written');
    assert.ok(recorded['exported spans']!.includes('Incorrect API key'), 'the failure reached the spans');
    for (const [where, text] of Object.entries(recorded)) {
      const found = secrets.filter((s) => text.includes(s));
      assert.deepEqual(found.map((s) => `${s.slice(0, 6)}…`), [], `${where} hold a secret`);
    }
  });
});
