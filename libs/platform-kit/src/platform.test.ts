import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { PlatformConnection } from './connection.js';
import { holdsConnection, type Platform } from './platform.js';

const Config = z.object({ mode: z.enum(['webhook', 'socket']) });
type Config = z.output<typeof Config>;

const connection: PlatformConnection<Config> = {
  open: () => Promise.reject(new Error('not opened in this test')),
};

function platformWith(conn?: PlatformConnection<Config>): Platform<Config> {
  return { name: 'demo', botConfigSchema: Config, configurable: true, streamsByDefault: false, ...(conn ? { connection: conn } : {}), outbound: () => { throw new Error('no adapter in this test'); } };
}

test('a platform without a connection is never held; one without holds() always is', () => {
  assert.equal(holdsConnection(platformWith(), { mode: 'socket' }), false);
  assert.equal(holdsConnection(platformWith(connection), { mode: 'webhook' }), true);
});

test('holds() decides per bot from the parsed settings; settings the schema refuses count as held', () => {
  const socketOnly = platformWith({ ...connection, holds: (c) => c.mode === 'socket' });
  assert.equal(holdsConnection(socketOnly, { mode: 'socket' }), true);
  assert.equal(holdsConnection(socketOnly, { mode: 'webhook' }), false);
  assert.equal(holdsConnection(socketOnly, { mode: 'carrier pigeon' }), true);
  assert.equal(holdsConnection(socketOnly, null), true);
});
