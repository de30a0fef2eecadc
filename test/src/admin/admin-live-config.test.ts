import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { AdminClient, startAdmin } from './admin-support.js';

/**
 * Live configuration across processes: a prompt changed through the admin API is used by the very next
 * reply. The services' caches keep rows for minutes, so only the `config.changed` event can explain it.
 */
describe('admin API: live configuration', () => {
  let sys: TestSystem;
  let api: AdminClient;

  before(async () => {
    sys = await startTestSystem({ pipelineConfig: { ai: { 'local-agent': { prompt: [{ role: 'system', content: 'You are the old prompt.' }] } } } });
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
    api = new AdminClient((await startAdmin(sys)).url);
    await api.login();
  });
  after(async () => {
    await sys?.stop();
  });

  const systemPrompt = () => String(sys.llm.requests.at(-1)?.body.messages?.[0]?.content ?? '');

  test('the next reply after a prompt change uses the new prompt, without waiting for a cache to expire', async () => {
    // Warm every cache with the old pipeline.
    await finalReply(sys, await send(sys, text('live-1', 'first')));
    assert.match(systemPrompt(), /^You are the old prompt\./);

    const current = await api.call('GET', '/pipelines/default');
    const config = structuredClone(current.body.config);
    config.ai['local-agent'].prompt = [{ role: 'system', content: 'You are the new prompt.' }];
    const changed = await api.call('PATCH', '/pipelines/default', { config }, { 'if-match': String(current.body.version) });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));

    // The admin API flushed the event to NATS before answering, so it is ahead of the next message.
    await finalReply(sys, await send(sys, text('live-2', 'second')));
    assert.match(systemPrompt(), /^You are the new prompt\./, 'the next reply used the new prompt (the caches keep rows for minutes otherwise)');
  });

  test('disabling a bot through the API stops it at the ingress at once', async () => {
    const bot = await api.call('GET', `/bots/${sys.botId}`);
    assert.equal((await api.call('PATCH', `/bots/${sys.botId}`, { enabled: false, version: bot.body.version })).status, 200);
    let status = 0;
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      status = (await sys.post(text('live-3', 'hello'))).status;
      if (status !== 202) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.notEqual(status, 202, 'the disabled bot no longer accepts messages');
  });
});
