import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { natsAuthFromEnv } from './connect.js';

test('natsAuthFromEnv: nothing set means no credentials and no TLS', () => {
  assert.deepEqual(natsAuthFromEnv({}), {});
});

test('natsAuthFromEnv: user and password, a mounted file winning over the inline value', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nats-auth-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'password');
  writeFileSync(file, 'fromfile\n');
  assert.deepEqual(natsAuthFromEnv({ NATS_USER: 'runner', NATS_PASSWORD: 'inline' }), { user: 'runner', pass: 'inline' });
  assert.deepEqual(natsAuthFromEnv({ NATS_USER: 'runner', NATS_PASSWORD: 'inline', NATS_PASSWORD_FILE: file }), { user: 'runner', pass: 'fromfile' });
  assert.deepEqual(natsAuthFromEnv({ NATS_TOKEN: 's3cret' }), { token: 's3cret' });
});

test('natsAuthFromEnv: TLS files turn TLS on; a missing secret file fails loudly', () => {
  assert.deepEqual(natsAuthFromEnv({ NATS_TLS_CA_FILE: '/ca.crt' }), { tls: { caFile: '/ca.crt' } });
  assert.deepEqual(natsAuthFromEnv({ NATS_TLS: 'true' }), { tls: {} });
  assert.deepEqual(natsAuthFromEnv({ NATS_TLS_CERT_FILE: '/c', NATS_TLS_KEY_FILE: '/k' }), { tls: { certFile: '/c', keyFile: '/k' } });
  assert.throws(() => natsAuthFromEnv({ NATS_USER: 'x', NATS_PASSWORD_FILE: '/nonexistent/password' }), /ENOENT/);
  const withSeed = natsAuthFromEnv({ NATS_NKEY_SEED: 'SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4' });
  assert.equal(typeof withSeed.authenticator, 'function');
});
