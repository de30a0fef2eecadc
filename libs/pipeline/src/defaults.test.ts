import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_PIPELINE_STAGES,
  defaultPipelineConfig,
  defaultPipelineStages,
  isPipelineStageName,
  withPipelineDefaults,
} from './defaults.js';

test('default stages are LangBot default_stage_order', () => {
  assert.deepEqual(defaultPipelineStages(), [
    'GroupRespondRuleCheckStage', 'BanSessionCheckStage', 'PreContentFilterStage', 'PreProcessor',
    'ConversationMessageTruncator', 'RequireRateLimitOccupancy', 'MessageProcessor',
    'ReleaseRateLimitOccupancy', 'PostContentFilterStage', 'ResponseWrapper', 'LongTextProcessStage',
    'SendResponseBackStage',
  ]);
  assert.equal(isPipelineStageName('MessageProcessor'), true);
  assert.equal(isPipelineStageName('messageprocessor'), false);
});

test('default config carries the values of default-pipeline-config.json', () => {
  const c = defaultPipelineConfig() as any;
  assert.deepEqual(c.trigger['group-respond-rules'], { at: true, prefix: ['ai'], regexp: [], random: 0 });
  assert.deepEqual(c.trigger['access-control'], { mode: 'blacklist', blacklist: [], whitelist: [] });
  assert.deepEqual(c.trigger['message-aggregation'], { enabled: false, delay: 1.5 });
  assert.deepEqual(c.safety['rate-limit'], { 'window-length': 60, limitation: 60, strategy: 'drop' });
  assert.deepEqual(c.ai.runner, { runner: 'local-agent', 'expire-time': 0 });
  assert.deepEqual(c.ai['local-agent'].model, { primary: '', fallbacks: [] });
  assert.equal(c.ai['local-agent']['max-round'], 10);
  assert.match(c.ai['local-agent'].prompt[0].content, /^You are a helpful assistant\. When tools are available/);
  assert.equal(c.ai['dashscope-app-api']['references-quote'], '参考资料来自:');
  assert.equal(c.ai['n8n-service-api'].timeout, 120);
  assert.equal(c.ai['langflow-api'].tweaks, '{}');
  assert.deepEqual(c.output['long-text-processing'], { threshold: 1000, strategy: 'none', 'font-path': '' });
  assert.deepEqual(c.output.misc, {
    'exception-handling': 'show-hint', 'failure-hint': 'Request failed.', 'at-sender': true,
    'quote-origin': true, 'track-function-calls': false, 'remove-think': false,
  });
});

test('withPipelineDefaults merges objects recursively and replaces arrays and scalars', () => {
  const merged = withPipelineDefaults({
    trigger: { 'group-respond-rules': { prefix: ['bot', '!'], random: 0.5 } },
    ai: { 'local-agent': { model: { primary: 'gpt' } }, runner: { runner: 'dify-service-api' } },
    output: { misc: { 'failure-hint': '请求失败' } },
    extra: { kept: true },
  }) as any;
  assert.deepEqual(merged.trigger['group-respond-rules'], { at: true, prefix: ['bot', '!'], regexp: [], random: 0.5 });
  assert.deepEqual(merged.ai['local-agent'].model, { primary: 'gpt', fallbacks: [] });
  assert.equal(merged.ai['local-agent']['max-round'], 10);
  assert.deepEqual(merged.ai.runner, { runner: 'dify-service-api', 'expire-time': 0 });
  assert.equal(merged.output.misc['failure-hint'], '请求失败');
  assert.equal(merged.output.misc['at-sender'], true);
  assert.deepEqual(merged.extra, { kept: true });
});

test('an array replaces the default array instead of appending to it', () => {
  const merged = withPipelineDefaults({ trigger: { 'group-respond-rules': { prefix: [] } } }) as any;
  assert.deepEqual(merged.trigger['group-respond-rules'].prefix, []);
});

test('a legacy plain model string replaces the model object', () => {
  const merged = withPipelineDefaults({ ai: { 'local-agent': { model: 'uuid-1' } } }) as any;
  assert.equal(merged.ai['local-agent'].model, 'uuid-1');
});

test('undefined keeps the default, null replaces it', () => {
  const merged = withPipelineDefaults({ safety: { 'rate-limit': { limitation: undefined, strategy: null } } }) as any;
  assert.equal(merged.safety['rate-limit'].limitation, 60);
  assert.equal(merged.safety['rate-limit'].strategy, null);
});

test('empty or missing partial yields the defaults', () => {
  assert.deepEqual(withPipelineDefaults({}), defaultPipelineConfig());
  assert.deepEqual(withPipelineDefaults(undefined), defaultPipelineConfig());
  assert.deepEqual(withPipelineDefaults(null), defaultPipelineConfig());
});

test('results never share state with the defaults or the input', () => {
  const input = { trigger: { 'ignore-rules': { prefix: ['/'] } } };
  const a = withPipelineDefaults(input) as any;
  a.trigger['ignore-rules'].prefix.push('#');
  a.trigger['group-respond-rules'].prefix.push('zzz');
  assert.deepEqual(input.trigger['ignore-rules'].prefix, ['/']);
  assert.deepEqual((defaultPipelineConfig() as any).trigger['group-respond-rules'].prefix, ['ai']);
  assert.deepEqual((withPipelineDefaults({}) as any).trigger['ignore-rules'].prefix, []);
  assert.equal(DEFAULT_PIPELINE_STAGES.length, 12);
});

test('a __proto__ key stays a plain data key', () => {
  const partial = JSON.parse('{"__proto__": {"polluted": true}, "trigger": {"__proto__": {"x": 1}}}');
  const merged = withPipelineDefaults(partial) as any;
  assert.equal(({} as any).polluted, undefined);
  assert.equal(Object.getPrototypeOf(merged), Object.prototype);
  assert.equal(Object.getPrototypeOf(merged.trigger), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(merged, '__proto__')?.value, { polluted: true });
});
