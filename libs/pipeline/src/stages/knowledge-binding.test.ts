import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordingDeps, testQuery } from '../testing.js';
import { STAGE_REGISTRY } from './registry.js';
import { buildRunRequest } from './message-processor.js';
import { knowledgeBaseIds } from './preprocessor.js';

async function preprocessed(localAgent: Record<string, unknown>) {
  const q = testQuery({ chain: [{ type: 'Plain', text: 'hi' }], config: { ai: { 'local-agent': localAgent } } });
  const stage = STAGE_REGISTRY.PreProcessor({ name: 'PreProcessor', config: q.config, deps: recordingDeps({ history: { load: async () => ({ conversationId: 'c1', history: [] }) } }).deps });
  await stage.process(q);
  return q;
}

test('the run request carries the knowledge bases PreProcessor listed, the rerank model (__none__ is none) and top-k', async () => {
  const q = await preprocessed({ 'knowledge-bases': ['kb1', 'kb2', 'kb1'], 'rerank-model': '__none__', 'rerank-top-k': 3 });
  assert.deepEqual(q.variables._knowledge_base_uuids, ['kb1', 'kb2', 'kb1']);
  assert.deepEqual(buildRunRequest(q).knowledge, { knowledgeBaseIds: ['kb1', 'kb2'], rerankModel: '', rerankTopK: 3 });
  // A plugin may change LangBot's variable before the run request is built.
  q.variables._knowledge_base_uuids = ['kb3'];
  assert.deepEqual(buildRunRequest(q).knowledge?.knowledgeBaseIds, ['kb3']);
});

test("no knowledge base: no binding; LangBot's legacy single knowledge-base still counts", async () => {
  assert.equal(buildRunRequest(await preprocessed({})).knowledge, undefined);
  const legacy = await preprocessed({ 'knowledge-base': 'old-kb', 'rerank-model': 'rr' });
  assert.deepEqual(buildRunRequest(legacy).knowledge, { knowledgeBaseIds: ['old-kb'], rerankModel: 'rr', rerankTopK: 5 });
  assert.deepEqual(knowledgeBaseIds([], '__none__'), []);
  assert.deepEqual(knowledgeBaseIds(['a'], 'b'), ['a'], 'the list wins over the legacy key');
});
