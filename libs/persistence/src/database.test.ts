import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { isDatabaseUnavailable, isDataError, isTransactionConflict, waitForDatabase } from './database.js';
import { testServerUrl } from './testing/temp-database.js';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A TCP relay from `port` to the test server, started only when asked: a database that comes up late. */
function relayTo(target: URL, port: number): Promise<net.Server> {
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    client.pipe(upstream).pipe(client);
    const close = () => { client.destroy(); upstream.destroy(); };
    client.on('error', close);
    upstream.on('error', close);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

test('waiting for a database that starts late resolves once it accepts connections', async () => {
  const target = new URL(testServerUrl());
  const port = await freePort();
  const url = Object.assign(new URL(target), { host: `127.0.0.1:${port}`, pathname: '/no_such_database_yet' }).toString();
  let relay: Promise<net.Server> | undefined;
  const codes: string[] = [];
  await waitForDatabase(url, {
    timeoutMs: 120_000,
    onUnavailable: (err) => {
      codes.push(String((err as { code?: string }).code));
      relay ??= relayTo(target, port);
    },
  });
  assert.ok(relay, 'the first attempt found nothing listening');
  assert.equal(codes[0], 'ECONNREFUSED');
  (await relay).close();
});

test('waiting gives up with the last connection error once its time is spent', async () => {
  const port = await freePort();
  const url = `postgresql://postgres@127.0.0.1:${port}/conveyor`;
  let attempts = 0;
  await assert.rejects(
    waitForDatabase(url, { timeoutMs: 600, onUnavailable: () => { attempts += 1; } }),
    (err: unknown) => isDatabaseUnavailable(err) && (err as { code?: string }).code === 'ECONNREFUSED',
  );
  assert.ok(attempts >= 1, `${attempts} retried attempt(s)`);
});

test('an error that is not about reaching the server is thrown at once', async () => {
  const url = Object.assign(new URL(testServerUrl()), { username: 'no_such_role_for_wait_test' }).toString();
  let attempts = 0;
  await assert.rejects(
    waitForDatabase(url, { timeoutMs: 60_000, onUnavailable: () => { attempts += 1; } }),
    (err: unknown) => !isDatabaseUnavailable(err),
  );
  assert.equal(attempts, 0);
});

test('a statement failed by other transactions is told apart from one that is wrong or a database that is down', () => {
  for (const code of ['40P01', '40001', '55P03']) assert.equal(isTransactionConflict({ code }), true, code);
  for (const code of ['22P05', '23505', 'ECONNREFUSED', '57P01']) assert.equal(isTransactionConflict({ code }), false, code);
  assert.equal(isTransactionConflict(new Error('deadlock detected')), false, 'by code, never by message');
  assert.equal(isTransactionConflict(null), false);
});

test('a statement refused for a value it carries (a data exception, a broken constraint) is told apart from every other failure', () => {
  for (const code of ['22003', '22008', '22P05', '23505', '23502']) assert.equal(isDataError({ code }), true, code);
  for (const code of ['40P01', '42601', '57P01', 'ECONNREFUSED', '22', '2200']) assert.equal(isDataError({ code }), false, code);
  assert.equal(isDataError(new Error('integer out of range')), false, 'by code, never by message');
  assert.equal(isDataError(undefined), false);
});
