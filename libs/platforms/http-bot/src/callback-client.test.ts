import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { backoffMs, deliverCallback } from './callback-client.js';
import { sign, verifyInbound } from './verify.js';

interface Hit {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

async function receiver(statuses: number[]): Promise<{ url: string; hits: Hit[]; server: Server }> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.statusCode = statuses[Math.min(hits.length - 1, statuses.length - 1)];
      res.end('ignored');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/langbot/callback`, hits, server };
}

const close = (s: Server) => new Promise<void>((resolve) => s.close(() => resolve()));
const BODY = '{"session_id": "s", "message": [{"type": "Plain", "text": "héllo"}]}';
const NOW_MS = 1767225603_900;

test('5xx twice then 200: three attempts, one signature, backoff 1 s then 2 s', async () => {
  const { url, hits, server } = await receiver([500, 502, 200]);
  const delays: number[] = [];
  try {
    const result = await deliverCallback({
      url,
      body: BODY,
      secret: 'example-outbound-secret',
      timeoutMs: 5000,
      maxRetries: 3,
      now: () => NOW_MS,
      sleep: async (ms) => {
        delays.push(ms);
      },
    });
    assert.deepEqual(result, { delivered: true, attempts: 3, lastStatus: 200 });
    assert.deepEqual(delays, [1000, 2000]);
    assert.equal(hits.length, 3);
    const sigs = new Set(hits.map((h) => `${h.headers['x-lb-timestamp']} ${h.headers['x-lb-signature']}`));
    assert.equal(sigs.size, 1);
    for (const h of hits) {
      assert.equal(h.headers['content-type'], 'application/json');
      assert.equal(h.headers['x-lb-timestamp'], '1767225603');
      assert.equal(h.body.toString('utf8'), BODY);
      assert.deepEqual(
        verifyInbound({
          secret: 'example-outbound-secret',
          timestampHeader: h.headers['x-lb-timestamp'] as string,
          signatureHeader: h.headers['x-lb-signature'] as string,
          rawBody: h.body,
          nowSeconds: NOW_MS / 1000,
        }),
        { ok: true },
      );
    }
    assert.equal(hits[0].headers['x-lb-signature'], sign('example-outbound-secret', '1767225603', Buffer.from(BODY)));
  } finally {
    await close(server);
  }
});

test('4xx gives up after one attempt', async () => {
  const { url, hits, server } = await receiver([404]);
  const delays: number[] = [];
  try {
    const result = await deliverCallback({ url, body: BODY, secret: 's', maxRetries: 3, sleep: async (ms) => void delays.push(ms) });
    assert.deepEqual(result, { delivered: false, attempts: 1, lastStatus: 404, error: 'HTTP 404' });
    assert.equal(hits.length, 1);
    assert.deepEqual(delays, []);
  } finally {
    await close(server);
  }
});

test('any status below 400 counts as success', async () => {
  const { url, server } = await receiver([204]);
  try {
    assert.deepEqual(await deliverCallback({ url, body: BODY, secret: 's', maxRetries: 0 }), {
      delivered: true,
      attempts: 1,
      lastStatus: 204,
    });
  } finally {
    await close(server);
  }
});

test('retries exhausted on 5xx; maxRetries ≤ 0 means a single attempt', async () => {
  const { url, hits, server } = await receiver([503]);
  const delays: number[] = [];
  try {
    const r = await deliverCallback({ url, body: BODY, secret: 's', maxRetries: 2, sleep: async (ms) => void delays.push(ms) });
    assert.deepEqual(r, { delivered: false, attempts: 3, lastStatus: 503, error: 'HTTP 503' });
    assert.deepEqual(delays, [1000, 2000]);
    const single = await deliverCallback({ url, body: BODY, secret: 's', maxRetries: -5, sleep: async () => {} });
    assert.equal(single.attempts, 1);
    assert.equal(hits.length, 4);
  } finally {
    await close(server);
  }
});

test('network errors and timeouts are retried', async () => {
  const refused = await deliverCallback({ url: 'http://127.0.0.1:1/cb', body: BODY, secret: 's', maxRetries: 1, sleep: async () => {} });
  assert.equal(refused.delivered, false);
  assert.equal(refused.attempts, 2);
  assert.equal(refused.lastStatus, undefined);
  assert.ok(refused.error);

  let calls = 0;
  const server = createServer((_req, res) => {
    calls++;
    if (calls === 1) return; // hang: the client's timeout must fire
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const r = await deliverCallback({ url: `http://127.0.0.1:${port}/`, body: BODY, secret: 's', timeoutMs: 200, maxRetries: 1, sleep: async () => {} });
    assert.deepEqual(r, { delivered: true, attempts: 2, lastStatus: 200 });
  } finally {
    server.closeAllConnections();
    await close(server);
  }
});

test('backoff is min(2^(n-1), 30) seconds', () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(backoffMs), [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
});
