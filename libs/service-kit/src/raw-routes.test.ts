import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveBeforeFramework } from './raw-routes.js';

function ask(port: number, path: string): Promise<{ status: number; body: string; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: res.headers['content-type'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('raw routes answer their requests ahead of the framework, logged; the rest reach the framework; a failure is a 500', async () => {
  const server = createServer((_req, res) => res.end('framework'));
  const logged: string[] = [];
  const errors: unknown[] = [];
  serveBeforeFramework(
    server,
    (req, res) => {
      if (req.url === '/raw') return Promise.resolve(void res.end('raw'));
      if (req.url === '/fails') return Promise.reject(new Error('handler bug'));
      if (req.url === '/throws') throw new Error('synchronous bug');
      return undefined;
    },
    (req, _res, next) => {
      logged.push(req.url ?? '');
      next();
    },
    (err) => errors.push(err),
  );
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    assert.equal((await ask(port, '/raw')).body, 'raw');
    assert.equal((await ask(port, '/other')).body, 'framework');
    for (const path of ['/fails', '/throws']) {
      const failed = await ask(port, path);
      assert.equal(failed.status, 500);
      assert.deepEqual(JSON.parse(failed.body), { statusCode: 500, message: 'Internal server error' });
      assert.match(failed.type ?? '', /^application\/json/);
    }
    assert.deepEqual(logged, ['/raw', '/fails', '/throws']);
    assert.deepEqual(errors.map((e) => (e as Error).message), ['handler bug', 'synchronous bug']);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
