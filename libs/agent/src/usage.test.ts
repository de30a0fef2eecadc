import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageTally } from './usage.js';
import type { ResolvedModel } from './model.js';

const model = (id: string, pricing?: ResolvedModel['pricing']): ResolvedModel => ({ id, baseUrl: 'http://x', apiKey: '', modelId: id, abilities: [], extraArgs: {}, timeoutMs: 1000, ...(pricing ? { pricing } : {}) });

test('a tally sums calls and tokens, prices them per 1M tokens, and names the last model', () => {
  const tally = new UsageTally();
  tally.add(model('a'), undefined);
  assert.equal(tally.cost, null);
  tally.add(model('b', { inputPerMTok: 2, outputPerMTok: 10 }), { prompt_tokens: 1000, completion_tokens: 500 });
  tally.add(model('b', { inputPerMTok: 2, outputPerMTok: 10 }), { prompt_tokens: 3000, completion_tokens: 0 });
  assert.deepEqual({ calls: tally.calls, input: tally.inputTokens, output: tally.outputTokens, model: tally.model }, { calls: 3, input: 4000, output: 500, model: 'b' });
  assert.ok(Math.abs((tally.cost ?? 0) - 0.013) < 1e-12);
});
