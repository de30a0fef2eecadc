import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { webhookRouteOf, type WebhookRoute } from './webhook-routes.js';

/** Express with the routes the ingress had as Nest controllers, and the service's routing settings. */
async function expressRoutes(): Promise<Server> {
  const app = express();
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  // Express prints the stack of every request it refuses unless told it runs under test.
  app.set('env', 'test');
  const answer = (route: WebhookRoute) => (_req: express.Request, res: express.Response) => void res.json(route);
  app.all('/bots/:botId', (req, res) => answer({ kind: 'bot', botId: String(req.params.botId), subPath: '' })(req, res));
  app.all('/bots/:botId/*subPath', (req, res) => {
    const sub = (req.params as Record<string, string | string[]>).subPath;
    answer({ kind: 'bot', botId: String(req.params.botId), subPath: Array.isArray(sub) ? sub.join('/') : sub })(req, res);
  });
  app.post('/telegram/:botId', (req, res) => answer({ kind: 'telegram', botId: String(req.params.botId) })(req, res));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return server;
}

/** What Express made of the request: the route and its parameters, or its status when no route took it. */
function askExpress(port: number, method: string, path: string): Promise<WebhookRoute | number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? (JSON.parse(body) as WebhookRoute) : res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the webhook routes match exactly the requests the Express routes matched, with the same parameters', async () => {
  const server = await expressRoutes();
  const { port } = server.address() as AddressInfo;
  const paths = [
    '/bots/abc', '/bots/abc/', '/bots/abc/sync', '/bots/abc/reset?x=1', '/bots/abc/a/b/c', '/bots/abc/a//b', '/bots/abc//',
    '/bots/ABC', '/Bots/abc', '/bots', '/bots/', '/bots//x', '/bots/a%20b', '/bots/a%2Fb/x%2Fy', '/bots/%E0%A4%A', '/bots/ok/%E0%A4%A',
    '/bots/abc?next=/bots/x', '/bots/abc%3Fq', '/bots/%F0%9F%98%80/s', '/telegram/t1', '/telegram/t1/', '/telegram/t1/x', '/telegram/',
    '/telegram/a%2Fb', '/TELEGRAM/t1', '/health', '/chat/api/bots', '/botsx/abc',
  ];
  try {
    for (const method of ['POST', 'GET', 'PUT', 'DELETE']) {
      for (const path of paths) {
        const fromExpress = await askExpress(port, method, path);
        const ours = webhookRouteOf(method, path);
        if (typeof fromExpress === 'number') assert.equal(ours, undefined, `${method} ${path}: Express answered ${fromExpress}, served here as ${JSON.stringify(ours)}`);
        else assert.deepEqual(ours, fromExpress, `${method} ${path}`);
      }
    }
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a parameter that does not decode is left to the framework, which refuses it', () => {
  assert.equal(webhookRouteOf('POST', '/bots/%E0%A4%A'), undefined);
  assert.deepEqual(webhookRouteOf('POST', '/bots/b1/sync'), { kind: 'bot', botId: 'b1', subPath: 'sync' });
  assert.deepEqual(webhookRouteOf('POST', '/telegram/t%201'), { kind: 'telegram', botId: 't 1' });
  assert.equal(webhookRouteOf('GET', '/telegram/t1'), undefined);
});
