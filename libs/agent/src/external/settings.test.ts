import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cozeConfig } from './coze.js';
import { dashscopeConfig } from './dashscope.js';
import { difyConfig } from './dify.js';
import { langflowConfig } from './langflow.js';
import { weknoraConfig } from './weknora.js';
import { deerflowConfig } from './deerflow.js';
import { tboxConfig } from './tbox.js';
import { ExternalRunnerError } from './common.js';

/** `env:NAME` resolves from a fixed table here, as the runner resolves it from its environment. */
const secret = (v: unknown) => (typeof v === 'string' && v.startsWith('env:') ? `resolved(${v.slice(4)})` : String(v ?? ''));

test('coze-api settings: LangBot\'s metadata defaults; the key may be an env reference', () => {
  assert.deepEqual(cozeConfig({ 'api-key': 'env:COZE_TOKEN', 'bot-id': '7' }, secret), {
    apiBase: 'https://api.coze.cn', apiKey: 'resolved(COZE_TOKEN)', botId: '7', autoSaveHistory: true, timeoutMs: 120_000,
  });
  const set = cozeConfig({ 'api-base': 'https://api.coze.com', 'auto-save-history': 'false', timeout: 30 }, secret);
  assert.deepEqual([set.apiBase, set.autoSaveHistory, set.timeoutMs], ['https://api.coze.com', false, 30_000]);
});

test('langflow-api settings: tweaks as JSON text or an object; LangBot\'s underscore keys win over the defaults\' hyphen keys', () => {
  const defaults = { 'base-url': 'http://localhost:7860', 'api-key': 'your-api-key', 'flow-id': 'f', 'input-type': 'chat', 'output-type': 'chat', tweaks: '{}' };
  assert.deepEqual(langflowConfig(defaults, secret).tweaks, {});
  assert.deepEqual(langflowConfig({ ...defaults, tweaks: '{"A-1": {"x": 1}}' }, secret).tweaks, { 'A-1': { x: 1 } });
  assert.deepEqual(langflowConfig({ ...defaults, tweaks: { B: {} } }, secret).tweaks, { B: {} });
  const typed = langflowConfig({ ...defaults, input_type: 'text', 'output-type': 'any' }, secret);
  assert.deepEqual([typed.inputType, typed.outputType], ['text', 'any']);
  assert.throws(() => langflowConfig({ ...defaults, tweaks: '{oops' }, secret), (e: Error) => e instanceof ExternalRunnerError && /tweaks is not valid JSON/.test(e.message));
  assert.throws(() => langflowConfig({ ...defaults, tweaks: '[1]' }, secret), /tweaks must be a JSON object/);
});

test('dashscope-app-api settings: agent or workflow only; references_quote (LangBot\'s code key) over references-quote', () => {
  const d = dashscopeConfig({ 'app-type': 'workflow', 'api-key': 'env:DS', 'app-id': 'a', 'references-quote': '参考资料来自:' }, secret);
  assert.deepEqual(d, { baseUrl: 'https://dashscope.aliyuncs.com/api/v1', appType: 'workflow', apiKey: 'resolved(DS)', appId: 'a', referencesQuote: '参考资料来自:', timeoutMs: 120_000 });
  assert.equal(dashscopeConfig({ references_quote: 'Source:', 'references-quote': '参考资料来自:' }, secret).referencesQuote, 'Source:');
  assert.throws(() => dashscopeConfig({ 'app-type': 'chat' }, secret), /unsupported dashscope-app-api app-type "chat"/);
});

test('dify-service-api settings: chatflow is an app type of its own; anything unknown is chat', () => {
  assert.equal(difyConfig({ 'app-type': 'chatflow' }, secret).appType, 'chatflow');
  assert.equal(difyConfig({ 'app-type': 'completion' }, secret).appType, 'chat');
});

test('weknora-api settings: LangBot\'s metadata defaults; the agent id follows the app type; agent or chat only, key and base URL required', () => {
  assert.deepEqual(weknoraConfig({ 'api-key': 'env:WK' }, secret), {
    baseUrl: 'http://localhost:8080/api/v1', apiKey: 'resolved(WK)', appType: 'agent', agentId: 'builtin-smart-reasoning',
    knowledgeBaseIds: [], webSearchEnabled: false, basePrompt: '请回答用户的问题。', timeoutMs: 120_000,
  });
  const chat = weknoraConfig({ 'api-key': 'k', 'app-type': 'chat', 'knowledge-base-ids': ['kb-1', ' ', 'kb-2'], 'web-search-enabled': 'true', timeout: 0 }, secret);
  assert.deepEqual([chat.agentId, chat.knowledgeBaseIds, chat.webSearchEnabled, chat.timeoutMs], ['builtin-quick-answer', ['kb-1', 'kb-2'], true, 120_000]);
  assert.throws(() => weknoraConfig({ 'api-key': 'k', 'app-type': 'workflow' }, secret), /unsupported weknora-api app-type "workflow"/);
  assert.throws(() => weknoraConfig({ 'api-key': '  ' }, secret), /weknora-api api-key is not set/);
  assert.throws(() => weknoraConfig({ 'api-key': 'k', 'base-url': '' }, secret), /weknora-api base-url is not set/);
});

test('deerflow-api settings: LangBot\'s metadata defaults; the API base must be an http(s) URL', () => {
  assert.deepEqual(deerflowConfig({}, secret), {
    apiBase: 'http://127.0.0.1:2026', apiKey: '', authHeader: '', assistantId: 'lead_agent', modelName: '', thinkingEnabled: false, planMode: false,
    subagentEnabled: false, maxConcurrentSubagents: 3, recursionLimit: 1000, timeoutMs: 300_000,
  });
  const set = deerflowConfig({ 'api-key': 'env:DF', 'plan-mode': true, 'max-concurrent-subagents': '5', timeout: '60', 'recursion-limit': 0 }, secret);
  assert.deepEqual([set.apiKey, set.planMode, set.maxConcurrentSubagents, set.timeoutMs, set.recursionLimit], ['resolved(DF)', true, 5, 60_000, 1000]);
  assert.throws(() => deerflowConfig({ 'api-base': 'localhost:2026' }, secret), /deerflow-api api-base must start with http:\/\/ or https:\/\//);
});

test('tbox-app-api settings: LangBot\'s api-key and app-id; the SDK\'s host unless base-url names another', () => {
  assert.deepEqual(tboxConfig({ 'api-key': 'env:TBOX', 'app-id': '2025APP' }, secret), { baseUrl: 'https://api.tbox.cn', apiKey: 'resolved(TBOX)', appId: '2025APP', timeoutMs: 300_000 });
  assert.deepEqual(tboxConfig({}, secret), { baseUrl: 'https://api.tbox.cn', apiKey: '', appId: '', timeoutMs: 300_000 });
  assert.equal(tboxConfig({ 'base-url': 'http://127.0.0.1:9000' }, secret).baseUrl, 'http://127.0.0.1:9000');
  assert.throws(() => tboxConfig({ 'base-url': 'api.tbox.cn' }, secret), (e: Error) => e instanceof ExternalRunnerError && /tbox-app-api base-url must start with http/.test(e.message));
});
