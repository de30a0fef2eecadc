import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '@conveyor/telemetry';
import { NestLogger, requestLogging } from './request-logging.js';

interface Logged { level: number; msg: string; context?: string; stack?: string; req?: { url: string; headers: Record<string, string> }; res?: { statusCode: number } }

/** A server answering each path's status code, logging through requestLogging into `lines`. */
async function serve(level: string): Promise<{ server: Server; url: string; lines: Logged[] }> {
  const { logger, lines } = capture(level);
  const log = requestLogging(logger);
  const server = createServer((req, res) => {
    log(req, res, () => {
      res.statusCode = Number(req.url?.split('/').pop()) || 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines };
}

/** A service logger writing its lines, parsed, into `lines`. */
function capture(level: string) {
  const lines: Logged[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('request-logging-test', { level }, stream), lines };
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
    assert.equal(logged.msg, 'request failed');
    assert.equal(logged.res?.statusCode, 503);
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

test('Nest\'s own lines go through the service logger with their context, errors with their stack', async () => {
  const { logger, lines } = capture('info');
  const nest = new NestLogger(logger);
  nest.log('Mapped {/bots, POST} route', 'RouterExplorer');
  nest.debug('not at info', 'RouterExplorer');
  nest.error('handler failed', 'Error: boom\n    at handler (bots.controller.ts:1:1)', 'ExceptionsHandler');
  nest.warn({ botId: 'b1' }, 'BotDirectory');
  await waitForLine(lines, (l) => l.context === 'BotDirectory');
  assert.deepEqual(lines.map((l) => [l.level, l.msg, l.context]), [
    [30, 'Mapped {/bots, POST} route', 'RouterExplorer'],
    [50, 'handler failed', 'ExceptionsHandler'],
    [40, undefined, 'BotDirectory'],
  ]);
  assert.match(lines[1]!.stack ?? '', /at handler/);
});

/** The line is written when the response closes, which may be just after the client has read it. */
async function waitForLine(lines: Logged[], match: (l: Logged) => boolean): Promise<Logged> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = lines.find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such log line in ${JSON.stringify(lines)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
