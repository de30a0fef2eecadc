import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunRequest } from '@conveyor/contracts';
import { modelOf } from './preprocessor.js';

test("the run request carries the pipeline's reasoning level per model; provider_default is left out", () => {
  assert.deepEqual(modelOf('m1'), { primary: 'm1', fallbacks: [] });
  assert.deepEqual(modelOf({ primary: 'm1', fallbacks: ['m2'], reasoning: { m1: 'high', m2: 'provider_default' } }), { primary: 'm1', fallbacks: ['m2'], reasoning: { m1: 'high' } });
  assert.deepEqual(modelOf({ primary: 'm1', reasoning: { m1: 'provider_default' } }), { primary: 'm1', fallbacks: [] });
  assert.equal(RunRequest.shape.model.safeParse({ primary: 'm1', fallbacks: [], reasoning: { m1: 'turbo' } }).success, false);
});
