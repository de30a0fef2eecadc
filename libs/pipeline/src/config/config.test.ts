import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunnerKind } from '@conveyor/contracts';
import { coerceBoolean, coerceInteger, coerceNumber } from './coerce.js';
import { parsePipelineConfig } from './load.js';
import { loadPipeline } from '../pipeline.js';
import { DEFAULT_PIPELINE_STAGES } from '../defaults.js';

test('coercion follows LangBot: int(), float(), "true"/"false", bool()', () => {
  assert.equal(coerceInteger('60'), 60);
  assert.equal(coerceInteger(' 7 '), 7);
  assert.equal(coerceInteger(12.9), 12);
  assert.equal(coerceInteger('1.5'), '1.5', 'int("1.5") fails in Python: the value stays');
  assert.equal(coerceNumber('0.5'), 0.5);
  assert.equal(coerceNumber(1), 1);
  assert.equal(coerceBoolean('TRUE'), true);
  assert.equal(coerceBoolean('False'), false);
  assert.equal(coerceBoolean('yes'), 'yes', 'any other string is an error');
  assert.equal(coerceBoolean(0), false);
  assert.equal(coerceBoolean(null), null);
});

test('a pasted config with string numbers and booleans parses like LangBot coerces it', () => {
  const r = parsePipelineConfig({ safety: { 'rate-limit': { limitation: '5', 'window-length': '10' } }, output: { misc: { 'at-sender': 'false' } }, trigger: { 'group-respond-rules': { random: '0.25' } } });
  assert.ok(r.ok);
  assert.equal(r.config.safety['rate-limit'].limitation, 5);
  assert.equal(r.config.output.misc['at-sender'], false);
  assert.equal(r.config.trigger['group-respond-rules'].random, 0.25);
  assert.equal(r.config.ai['local-agent']['max-round'], 10, 'defaults fill the rest');
});

test('an invalid config is rejected with key paths and reasons', () => {
  const r = loadPipeline('p', DEFAULT_PIPELINE_STAGES, { safety: { 'rate-limit': { limitation: 'lots', strategy: 'queue' } }, output: { misc: { 'at-sender': 'maybe' } } });
  assert.equal(r.ok, false);
  const paths = !r.ok ? r.issues.map((i) => i.path).sort() : [];
  assert.deepEqual(paths, ['config.output.misc.at-sender', 'config.safety.rate-limit.limitation', 'config.safety.rate-limit.strategy']);
});

test('a runner Conveyor does not implement rejects the pipeline at ai.runner.runner; the implemented ones load', () => {
  const r = loadPipeline('p', DEFAULT_PIPELINE_STAGES, { ai: { runner: { runner: 'ollama-runner' } } });
  assert.equal(r.ok, false);
  assert.deepEqual(!r.ok && r.issues, [{ path: 'config.ai.runner.runner', reason: 'unknown runner "ollama-runner"; Conveyor runs local-agent, dify-service-api, n8n-service-api, coze-api, langflow-api, dashscope-app-api, weknora-api, deerflow-api, tbox-app-api' }]);
  for (const runner of RunnerKind.options) {
    const parsed = parsePipelineConfig({ ai: { runner: { runner } } });
    assert.ok(parsed.ok && parsed.config.ai.runner.runner === runner, runner);
  }
});

test('unknown stages and a missing MessageProcessor reject the pipeline', () => {
  const r = loadPipeline('p', ['GroupRespondRuleCheckStage', 'NoSuchStage'], {});
  assert.equal(r.ok, false);
  assert.deepEqual(!r.ok && r.issues.map((i) => i.path), ['stages[1]', 'stages']);
  const ok = loadPipeline('p', ['PreProcessor', 'MessageProcessor', 'SendResponseBackStage'], {});
  assert.ok(ok.ok && ok.pipeline.boundary === 1, 'the split follows MessageProcessor');
});
