import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toolSchemaProblem } from './tool-schema.js';

test('an object schema passes; a non-object or malformed one is refused with the reason', () => {
  assert.equal(toolSchemaProblem({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), undefined);
  assert.equal(toolSchemaProblem({ type: 'object' }), undefined);
  assert.match(toolSchemaProblem({ type: 'string' }) ?? '', /must be an object schema/);
  assert.match(toolSchemaProblem({ type: 'object', properties: { city: { type: 'strin' } } }) ?? '', /not valid JSON Schema/);
  assert.match(toolSchemaProblem({ type: 'object', required: 'city' }) ?? '', /not valid JSON Schema/);
  assert.match(toolSchemaProblem({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } }) ?? '', /not valid JSON Schema/);
});
