import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headerOf, queryOf } from './inbound.js';

test('query parameters are decoded, the first of a repeated one kept; no query is an empty object', () => {
  assert.deepEqual(queryOf('/bots/b1?msg_signature=ab&echostr=P9n%2Fq%2B%3D%3D&nonce=1&nonce=2'), { msg_signature: 'ab', echostr: 'P9n/q+==', nonce: '1' });
  assert.deepEqual(queryOf('/bots/b1'), {});
  assert.deepEqual(queryOf('/bots/b1?'), {});
  assert.deepEqual(Object.getPrototypeOf(queryOf('/x?__proto__=1')), Object.prototype);
});

test('a repeated header gives its first value', () => {
  assert.equal(headerOf({ 'x-a': ['1', '2'] }, 'X-A'), '1');
  assert.equal(headerOf({}, 'x-a'), undefined);
});
