import { test } from 'node:test';
import assert from 'node:assert/strict';
import { maskSecrets, unmaskSecrets } from './masking.js';
import { AdminApiError } from './errors.js';

const stored = { inbound_secret: 'a-long-inbound-secret-1234', callback_url: 'https://example.test/cb', token: 'short', headers: { Authorization: 'Bearer abcdefghijklmnopqrstuvwxyz' }, api_key: 'env:MY_KEY' };

test('secret-looking keys are masked at any depth; references and other values are not', () => {
  assert.deepEqual(maskSecrets(stored), {
    inbound_secret: '••••1234',
    callback_url: 'https://example.test/cb',
    token: '••••',
    headers: { Authorization: '••••wxyz' },
    api_key: 'env:MY_KEY',
  });
});

test('a masked value sent back keeps the stored secret; a new value replaces it', () => {
  const incoming = { ...(maskSecrets(stored) as Record<string, unknown>), token: 'a-new-token' };
  assert.deepEqual(unmaskSecrets(incoming, stored, 'body.adapterConfig'), { ...stored, token: 'a-new-token' });
});

test('a masked value where nothing is stored is refused, naming the field', () => {
  assert.throws(() => unmaskSecrets({ webhook_secret: '••••' }, {}, 'body.adapterConfig'), (err: AdminApiError) => err.details.field === 'body.adapterConfig.webhook_secret');
});
