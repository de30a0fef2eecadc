import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { PipelineConfigSchema } from '@conveyor/pipeline/config';
import { buildFields, getAt, jsonOrText, numberInput, setAt, type FieldNode } from './schema-form.js';

describe('the pipeline form', () => {
  const root = buildFields(z.toJSONSchema(PipelineConfigSchema, { io: 'output', unrepresentable: 'any' }));
  const find = (path: string): FieldNode | undefined => {
    const walk = (n: FieldNode): FieldNode | undefined => (n.path.join('.') === path ? n : n.children?.map(walk).find(Boolean));
    return walk(root);
  };
  test('is built from the schema with LangBot key names and input kinds', () => {
    assert.deepEqual(root.children?.map((c) => c.key), ['trigger', 'safety', 'ai', 'output']);
    assert.equal(find('trigger.group-respond-rules.at')?.kind, 'boolean');
    assert.equal(find('trigger.group-respond-rules.prefix')?.kind, 'string-list');
    assert.deepEqual(find('ai.runner.runner')?.options?.slice(0, 2), ['local-agent', 'dify-service-api']);
    const limit = find('safety.rate-limit.window-length');
    assert.equal(limit?.kind, 'integer');
    assert.equal(limit?.min, 1);
    assert.equal(limit?.max, undefined, 'the integer bound zod adds is no input bound');
    assert.deepEqual(find('ai.local-agent.prompt')?.itemFields?.map((f) => [f.key, f.kind]), [['role', 'string'], ['content', 'string']]);
    assert.equal(find('ai.local-agent.model')?.kind, 'json');
    assert.equal(find('ai.local-agent.knowledge-base')?.optional, true);
  });
  test('setAt copies, keeps siblings and unknown keys, and removes with undefined', () => {
    const before = { ai: { runner: { runner: 'local-agent', 'expire-time': 0 }, dify: { keep: 1 } } };
    const after = setAt(before, ['ai', 'runner', 'runner'], 'coze-api');
    assert.equal(getAt(after, ['ai', 'runner', 'runner']), 'coze-api');
    assert.deepEqual(getAt(after, ['ai', 'dify']), { keep: 1 });
    assert.equal(before.ai.runner.runner, 'local-agent');
    assert.deepEqual(setAt(after, ['ai', 'dify'], undefined), { ai: { runner: { runner: 'coze-api', 'expire-time': 0 } } });
  });
  test('typed text: numbers, JSON or a plain model id', () => {
    assert.equal(numberInput(' 60 ', 'integer'), 60);
    assert.equal(numberInput('1.5', 'integer'), '1.5');
    assert.equal(numberInput('1.5', 'number'), 1.5);
    assert.equal(jsonOrText('gpt-4o'), 'gpt-4o');
    assert.equal(jsonOrText('4o-mini'), '4o-mini');
    assert.deepEqual(jsonOrText('{"primary":"a","fallbacks":["b"]}'), { primary: 'a', fallbacks: ['b'] });
  });
});
