import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectSchemaProblem } from './object-schema.js';

test('an object schema passes; a non-object or malformed one is refused with the reason', () => {
  assert.equal(objectSchemaProblem({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), undefined);
  assert.equal(objectSchemaProblem({ type: 'object' }), undefined);
  assert.match(objectSchemaProblem({ type: 'string' }) ?? '', /must be an object schema/);
  assert.match(objectSchemaProblem({ type: 'object', properties: { city: { type: 'strin' } } }) ?? '', /not valid JSON Schema/);
  assert.match(objectSchemaProblem({ type: 'object', required: 'city' }) ?? '', /not valid JSON Schema/);
  assert.match(objectSchemaProblem({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } }) ?? '', /not valid JSON Schema/);
});
