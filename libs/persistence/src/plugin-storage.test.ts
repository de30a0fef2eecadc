import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTempDatabase } from './testing/index.js';
import { PluginStorage, PluginStorageError } from './plugin-storage.js';

const database = useTempDatabase();

test('each plugin sees only its own keys; set replaces, delete removes, list filters by prefix in order', async () => {
  const storage = new PluginStorage(database());
  assert.equal(await storage.get('acme/a', 'k'), null);
  assert.equal(await storage.set('acme/a', 'user:2', '{"n":2}'), 7);
  await storage.set('acme/a', 'user:1', 'one');
  await storage.set('acme/a', 'other', 'x');
  await storage.set('acme/b', 'user:1', 'b\'s');
  await storage.set('acme/a', 'user:1', '一');
  assert.equal(await storage.get('acme/a', 'user:1'), '一');
  assert.equal(await storage.get('acme/b', 'user:1'), 'b\'s');
  assert.deepEqual(await storage.keys('acme/a', 'user:'), ['user:1', 'user:2']);
  assert.deepEqual(await storage.keys('acme/b'), ['user:1']);
  assert.equal(await storage.delete('acme/a', 'user:1'), true);
  assert.equal(await storage.delete('acme/a', 'user:1'), false);
  assert.deepEqual(await storage.keys('acme/a'), ['other', 'user:2']);
});

test('the bounds on a value, on keys and on bytes refuse the write with a code and keep what was stored', async () => {
  const storage = new PluginStorage(database(), { valueBytes: 10, keys: 3, bytes: 20 });
  await assert.rejects(storage.set('acme/c', 'big', '一二三四'), (err: unknown) => err instanceof PluginStorageError && err.code === 'value_too_large');
  await storage.set('acme/c', 'a', '1234567890');
  await storage.set('acme/c', 'b', '123456789');
  await assert.rejects(storage.set('acme/c', 'c', '12'), (err: unknown) => err instanceof PluginStorageError && err.code === 'storage_full');
  await storage.set('acme/c', 'a', '1');
  await storage.set('acme/c', 'c', '12');
  await assert.rejects(storage.set('acme/c', 'd', '1'), (err: unknown) => err instanceof PluginStorageError && err.code === 'too_many_keys');
  await storage.set('acme/c', 'c', '123', );
  assert.deepEqual(await Promise.all(['a', 'b', 'c', 'd'].map((k) => storage.get('acme/c', k))), ['1', '123456789', '123', null]);
  await storage.set('acme/other', 'd', '1');
});

test('writes racing for the last room: exactly one passes the bound', async () => {
  const storage = new PluginStorage(database(), { valueBytes: 100, keys: 5, bytes: 100 });
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => storage.set('acme/race', `k${i}`, 'x'.repeat(60))));
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  assert.equal((await storage.keys('acme/race')).length, 1);
});
