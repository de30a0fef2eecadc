import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BearerToken, MIN_BEARER_TOKEN_CHARS } from './bearer-token.js';

const secret = 'k9f2-Qx7_Lm3pZ8rTt4w';

test('only the exact token in the Bearer scheme matches', () => {
  const token = new BearerToken(secret);
  assert.equal(token.matches(`Bearer ${secret}`), true);
  assert.equal(token.matches(`bearer ${secret}`), true, 'the scheme name is case-insensitive');
  assert.equal(token.matches(`Bearer  ${secret} `), true, 'spaces around the token are no part of it');
  const refused = [
    undefined,
    '',
    'Bearer',
    'Bearer ',
    secret,
    `Basic ${secret}`,
    `Bearer ${secret.slice(0, -1)}`,
    `Bearer ${secret}x`,
    `Bearer ${secret.toUpperCase()}`,
    `Bearer ${secret} extra`,
    `Bearer x${secret}`,
  ];
  for (const header of refused) assert.equal(token.matches(header), false, JSON.stringify(header));
});

test('a token too short to resist guessing is refused at construction', () => {
  assert.throws(() => new BearerToken('x'.repeat(MIN_BEARER_TOKEN_CHARS - 1)), RangeError);
  assert.doesNotThrow(() => new BearerToken('x'.repeat(MIN_BEARER_TOKEN_CHARS)));
});
