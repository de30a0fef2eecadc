import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pinoHttp } from 'pino-http';
import { createLogger } from '@conveyor/telemetry';
import { requestLogging } from './request-logging.js';

interface Logged { level: number; msg: string; req?: { url: string; headers: Record<string, string> } }

/** A server answering each path's status code, logging through requestLogging into `lines`. */
async function serve(level: string): Promise<{ server: Server; url: string; lines: Logged[] }> {
  const lines: Logged[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const log = pinoHttp(requestLogging(createLogger('request-logging-test', { level }, stream)));
  const server = createServer((req, res) => {
    log(req, res);
    res.statusCode = Number(req.url?.split('/').pop()) || 200;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines };
}

const close = (server: Server) => new Promise((resolve) => server.close(resolve));
const webhook = { 'x-telegram-bot-api-secret-token': 'LEAK-webhook', authorization: 'Bearer LEAK-token', cookie: 'sid=LEAK-cookie' };

test('at info level a served request writes no line, a failed one a warning with its headers redacted', async () => {
  const { server, url, lines } = await serve('info');
  try {
    assert.equal((await fetch(`${url}/telegram/200`, { method: 'POST', headers: webhook })).status, 200);
    assert.equal((await fetch(`${url}/telegram/503`, { method: 'POST', headers: webhook })).status, 503);
    const logged = await waitForLine(lines, (l) => l.req?.url === '/telegram/503');
    assert.equal(logged.level, 40, 'warn');
    assert.deepEqual(lines.map((l) => l.req?.url), ['/telegram/503'], 'the served request was not logged');
    assert.doesNotMatch(JSON.stringify(lines), /LEAK/);
    assert.equal(logged.req!.headers['x-telegram-bot-api-secret-token'], '[Redacted]');
  } finally {
    await close(server);
  }
});

test('at debug level every request but probes and scrapes is logged at debug, credential headers redacted', async () => {
  const { server, url, lines } = await serve('debug');
  try {
    await fetch(`${url}/health/ready`);
    await fetch(`${url}/metrics`);
    await fetch(`${url}/telegram/200`, { method: 'POST', headers: webhook });
    const logged = await waitForLine(lines, (l) => l.req?.url === '/telegram/200');
    assert.equal(logged.level, 20, 'debug');
    assert.deepEqual(lines.map((l) => l.req?.url), ['/telegram/200']);
    assert.doesNotMatch(JSON.stringify(lines), /LEAK/);
    for (const name of Object.keys(webhook)) assert.equal(logged.req!.headers[name], '[Redacted]', name);
  } finally {
    await close(server);
  }
});

/** pino-http logs when the response finishes, which may be just after the client has read it. */
async function waitForLine(lines: Logged[], match: (l: Logged) => boolean): Promise<Logged> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = lines.find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such log line in ${JSON.stringify(lines)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
