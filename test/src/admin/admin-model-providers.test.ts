import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL_PRESETS } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { startFakeAnthropic, startFakeGemini, startFakeOllama, type NativeModelFake } from '../fakes/index.js';
import { AdminClient, startAdmin } from './admin-support.js';

/**
 * Models of each provider kind through the admin API: the presets list, a preset filling provider,
 * URL and abilities, the kind on every answer and in PATCH, and the connection test speaking each
 * native API (a wrong key answered with the provider's status).
 */
describe('admin API: model providers and presets', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  let anthropic: NativeModelFake;
  let gemini: NativeModelFake;
  let ollama: NativeModelFake;

  before(async () => {
    [anthropic, gemini, ollama] = await Promise.all([startFakeAnthropic({ apiKey: 'ant-admin-key' }), startFakeGemini({ apiKey: 'gem-admin-key' }), startFakeOllama()]);
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
  });
  after(async () => {
    await sys?.stop();
    await Promise.all([anthropic?.close(), gemini?.close(), ollama?.close()]);
  });

  test('GET /model-presets lists the services with their provider and base URL', async () => {
    const res = await api.call('GET', '/model-presets');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.items.map((p: { id: string }) => p.id), MODEL_PRESETS.map((p) => p.id));
    const deepseek = res.body.items.find((p: { id: string }) => p.id === 'deepseek');
    assert.deepEqual([deepseek.provider, deepseek.baseUrl], ['openai', 'https://api.deepseek.com/v1']);
  });

  test('a preset fills provider, base URL and abilities; the kind is on the answer and can be changed', async () => {
    const created = await api.call('POST', '/models', { id: 'ds', preset: 'deepseek', model: 'deepseek-chat' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual([created.body.provider, created.body.baseUrl, created.body.abilities], ['openai', 'https://api.deepseek.com/v1', ['func_call']]);
    const plain = await api.call('POST', '/models', { id: 'plain', baseUrl: 'http://127.0.0.1:1/v1', model: 'x' });
    assert.equal(plain.body.provider, 'openai');
    const patched = await api.call('PATCH', '/models/plain', { provider: 'ollama', version: plain.body.version });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal((await api.call('GET', '/models/plain')).body.provider, 'ollama');
  });

  test('bad provider or preset, or neither a base URL nor a preset: 400 naming the field', async () => {
    const noUrl = await api.call('POST', '/models', { id: 'nourl', model: 'x' });
    assert.equal(noUrl.status, 400);
    assert.match(JSON.stringify(noUrl.body), /baseUrl/);
    const badPreset = await api.call('POST', '/models', { id: 'bp', preset: 'nowhere', model: 'x' });
    assert.equal(badPreset.status, 400);
    assert.match(JSON.stringify(badPreset.body), /preset/);
    const badKind = await api.call('POST', '/models', { id: 'bk', provider: 'bedrock', baseUrl: 'http://127.0.0.1:1', model: 'x' });
    assert.equal(badKind.status, 400);
    assert.match(JSON.stringify(badKind.body), /provider/);
  });

  test('the connection test speaks each native API; a wrong key is the provider\'s refusal', async () => {
    anthropic.setDefault({ text: 'pong' });
    gemini.setDefault({ text: 'pong' });
    ollama.setDefault({ text: 'pong' });
    const cases = [
      { id: 'claude', body: { preset: 'anthropic', baseUrl: anthropic.url, model: 'claude-x', apiKey: 'ant-admin-key' }, fake: anthropic },
      { id: 'gem', body: { preset: 'gemini', baseUrl: gemini.url, model: 'gemini-x', apiKey: 'gem-admin-key' }, fake: gemini },
      { id: 'llama', body: { provider: 'ollama', baseUrl: ollama.url, model: 'qwen3' }, fake: ollama },
    ];
    for (const c of cases) {
      const created = await api.call('POST', '/models', { id: c.id, ...c.body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const tested = await api.call('POST', `/models/${c.id}/test`);
      assert.equal(tested.status, 200);
      assert.deepEqual([tested.body.ok, tested.body.sample], [true, 'pong'], `${c.id}: ${JSON.stringify(tested.body)}`);
      assert.ok(c.fake.requests.length > 0);
    }
    await api.call('POST', '/models', { id: 'claude-wrong', preset: 'anthropic', baseUrl: anthropic.url, model: 'claude-x', apiKey: 'not-it' });
    const refused = await api.call('POST', '/models/claude-wrong/test');
    assert.equal(refused.body.ok, false);
    assert.match(refused.body.error, /^HTTP 401: /);
    assert.ok(!JSON.stringify(refused.body).includes('not-it'));
  });

  test('the OpenAPI document has the presets route and the provider fields', async () => {
    const doc = (await (await fetch(`${admin.url}/api/docs-json`)).json()) as { paths: Record<string, unknown>; components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
    assert.ok(doc.paths['/api/v1/model-presets']);
    assert.ok(doc.components.schemas.ModelPresetList);
    assert.ok(doc.components.schemas.ModelCreate.properties?.provider);
    assert.ok(doc.components.schemas.ModelCreate.properties?.preset);
    assert.ok(doc.components.schemas.Model.properties?.provider);
  });
});
