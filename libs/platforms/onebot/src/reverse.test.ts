import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import WebSocket from 'ws';
import { OneBotConfigSchema, parseOneBotConfig, type OneBotConfig } from './config.js';
import { listenReverse } from './reverse.js';

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** The HTTP status the listener answers an upgrade with, or 101 when it accepts the socket. */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('error', (err) => reject(err));
  });
}

test('reverse mode without an access-token is a config error naming the field; forward mode may go without', () => {
  const r = OneBotConfigSchema.safeParse({ mode: 'reverse', port: 6700 });
  assert.equal(r.success, false);
  assert.deepEqual(!r.success && r.error.issues.map((i) => i.path.join('.')), ['access-token']);
  assert.equal(OneBotConfigSchema.safeParse({ mode: 'reverse', 'access-token': '' }).success, false);
  assert.equal(parseOneBotConfig({ mode: 'reverse', 'access-token': 't' })['access-token'], 't');
  assert.equal(parseOneBotConfig({ mode: 'forward' })['access-token'], '');
  assert.equal(parseOneBotConfig({})['access-token'], '');
});

test('a reverse listener with no token (a config that bypassed the schema) refuses every connection', async () => {
  const port = await freePort();
  // Built without the schema: parseOneBotConfig refuses this config.
  const config: OneBotConfig = { mode: 'reverse', host: '127.0.0.1', port, 'access-token': '', path: '/' };
  const listener = await listenReverse(config, { onFrame: () => undefined });
  try {
    const url = `ws://127.0.0.1:${port}/`;
    assert.equal(await upgradeStatus(url), 401);
    assert.equal(await upgradeStatus(url, { authorization: 'Bearer ' }), 401);
    assert.equal(await upgradeStatus(`${url}?access_token=`), 401);
    assert.equal(listener.current(), undefined, 'nobody holds the bot');
  } finally {
    await listener.close('test over');
  }
});

test('with a token, only the implementation presenting it gets in, and it is not locked out by a stranger first', async () => {
  const port = await freePort();
  const config = parseOneBotConfig({ mode: 'reverse', host: '127.0.0.1', port, 'access-token': 'reverse-token' });
  const listener = await listenReverse(config, { onFrame: () => undefined });
  try {
    const url = `ws://127.0.0.1:${port}/`;
    assert.equal(await upgradeStatus(url), 401, 'the stranger');
    assert.equal(await upgradeStatus(url, { authorization: 'Bearer wrong' }), 401);
    const impl = new WebSocket(url, { headers: { authorization: 'Bearer reverse-token' } });
    await new Promise<void>((resolve, reject) => {
      impl.once('open', () => resolve());
      impl.once('error', reject);
    });
    try {
      assert.equal(await upgradeStatus(url, { authorization: 'Bearer reverse-token' }), 409, 'one session at a time');
    } finally {
      impl.close();
    }
  } finally {
    await listener.close('test over');
  }
});
