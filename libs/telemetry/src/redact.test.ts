import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REDACTED, redactUrlText } from './redact.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

test('Telegram bot tokens in the path, credential query parameters and user info are redacted; the rest is kept', () => {
  const cases: [string, string][] = [
    ['https://api.telegram.org/bot123456:AAE-secret_x/sendMessage', `https://api.telegram.org/bot${REDACTED}/sendMessage`],
    ['https://api.telegram.org/file/bot123456:AAE-secret/photos/p.jpg', `https://api.telegram.org/file/bot${REDACTED}/photos/p.jpg`],
    ['/bot1%3Asecret/getMe', `/bot${REDACTED}/getMe`],
    ['https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=ww1&corpsecret=S3CR3T', `https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=ww1&corpsecret=${REDACTED}`],
    ['/cgi-bin/message/send?access_token=TOK&debug=1', `/cgi-bin/message/send?access_token=${REDACTED}&debug=1`],
    ['corpid=ww1&corpsecret=S3CR3T', `corpid=ww1&corpsecret=${REDACTED}`],
    ['https://oapi.dingtalk.com/robot/sendBySession?session=abc', `https://oapi.dingtalk.com/robot/sendBySession?session=${REDACTED}`],
    ['http://user:pw@proxy.local/x', `http://${REDACTED}@proxy.local/x`],
    ['?api_key=1&x-api-key=2&q=keep', `?api_key=${REDACTED}&x-api-key=${REDACTED}&q=keep`],
  ];
  for (const [input, want] of cases) assert.equal(redactUrlText(input), want, input);
  // Nothing to hide: unchanged, the ingress' own bot route included.
  for (const keep of ['/bots/5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34/sync', 'https://api.example.com/v1/chat/completions', '/health/ready', 'page=2&q=bottle']) {
    assert.equal(redactUrlText(keep), keep);
  }
});

// A process started the way services are (telemetry preloaded) making the requests the platform
// adapters make, with fetch (undici) and node:http, inside a span and outside one, one of them failing.
const script = `
import http from 'node:http';
import { trace } from '@opentelemetry/api';
import { shutdownTelemetry } from '@conveyor/telemetry/sdk';
const base = process.env.TARGET;
const canary = process.env.CANARY;
const get = (url) => new Promise((resolve, reject) => http.get(url, (res) => { res.resume(); res.on('end', resolve); }).on('error', reject));
await trace.getTracer('redact-test').startActiveSpan('parent', async (span) => {
  await fetch(base + '/bot1:' + canary + '/sendMessage', { method: 'POST', body: '{}' });
  await fetch(base + '/file/bot1:' + canary + '/photos/p.jpg');
  await fetch(base + '/cgi-bin/gettoken?corpid=ww1&corpsecret=' + canary);
  await get(base + '/cgi-bin/message/send?access_token=' + canary);
  await fetch('http://127.0.0.1:1/bot1:' + canary + '/getMe?access_token=' + canary).catch(() => undefined);
  span.end();
});
await fetch(base + '/robot/sendBySession?session=' + canary);
await shutdownTelemetry();
console.log('DONE');
`;

let collector: Server;
let collectorUrl: string;
let target: Server;
let targetUrl: string;
const exported: string[] = [];
const targetSaw: string[] = [];

before(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') exported.push(Buffer.concat(chunks).toString('latin1'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  // Stands in for api.telegram.org, WeCom and DingTalk: answers everything with 200.
  target = createServer((req, res) => {
    targetSaw.push(req.url ?? '');
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await Promise.all([collector, target].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
});

after(async () => {
  await Promise.all([collector, target].map((s) => new Promise((resolve) => s.close(resolve))));
});

test('exported spans of HTTP client calls carry no credential from the URL: a canary secret is found 0 times', async () => {
  const canary = `canary${randomBytes(12).toString('hex')}`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--import', '@conveyor/telemetry/register', '--input-type=module', '-e', script], {
      cwd: repoRoot,
      env: { ...clean, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'redact-test', TARGET: targetUrl, CANARY: canary },
      timeout: 60_000,
    }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out)));
  });
  assert.match(stdout, /DONE/);
  // The requests went out with the secret (the platform needs it); only the spans lose it.
  assert.equal(targetSaw.filter((u) => u.includes(canary)).length, 5);
  const all = exported.join('\n');
  assert.ok(all.includes('redact-test'), 'the spans were exported');
  assert.ok(all.includes(`/bot${REDACTED}/sendMessage`), 'the Telegram call is there, its token redacted');
  assert.ok(all.includes(`corpsecret=${REDACTED}`), 'the WeCom token call is there, its secret redacted');
  assert.ok(all.includes(`access_token=${REDACTED}`), 'the node:http call is there, its token redacted');
  assert.equal(all.split(canary).length - 1, 0, 'the canary appears in no exported span');
});
