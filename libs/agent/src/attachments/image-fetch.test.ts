import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ImageFetcher, ImageFetchError, redactedUrl, sniffImageType, type ImageFailureReason } from './image-fetch.js';
import { isPrivateAddress } from './address-policy.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de', 'hex');

async function reason(p: Promise<unknown>): Promise<ImageFailureReason> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ImageFetchError, `an ImageFetchError, got ${String(err)}`);
    return err.reason;
  }
  assert.fail('the fetch succeeded');
}

describe('ImageFetcher', () => {
  let server: Server;
  let base: string;
  let bigWritten = 0;
  const limits = { timeoutMs: 1_000, maxBytes: 64 * 1024, maxRedirects: 2, allowPrivateNetwork: true };

  before(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '';
      if (path === '/ok.png') res.writeHead(200, { 'content-type': 'image/png; charset=binary' }).end(PNG);
      else if (path === '/missing') res.writeHead(404).end('gone');
      else if (path === '/html') res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>');
      else if (path === '/liar.png') res.writeHead(200, { 'content-type': 'image/png' }).end('plain text');
      else if (path === '/declared-big') res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(10 * 1_048_576) }).end();
      else if (path === '/endless') {
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        const block = Buffer.alloc(16 * 1024, 0xff);
        const pump = () => {
          while (!res.destroyed && bigWritten < 50 * 1_048_576) {
            bigWritten += block.length;
            if (!res.write(block)) return void res.once('drain', pump);
          }
        };
        res.on('error', () => undefined);
        pump();
      } else if (path === '/stall') res.writeHead(200, { 'content-type': 'image/png' }).flushHeaders();
      else if (path.startsWith('/hop/')) {
        const n = Number(path.slice(5));
        res.writeHead(302, { location: n > 1 ? `/hop/${n - 1}` : '/ok.png' }).end();
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('an image becomes a data URL of the type its bytes are', async () => {
    const fetcher = new ImageFetcher(limits);
    const image = await fetcher.fetch(`${base}/ok.png`);
    assert.equal(image.dataUrl, `data:image/png;base64,${PNG.toString('base64')}`);
    assert.equal(image.bytes, PNG.length);
    await fetcher.close();
  });

  test('a 404, a wrong declared type and bytes that are no image are refused', async () => {
    const fetcher = new ImageFetcher(limits);
    assert.equal(await reason(fetcher.fetch(`${base}/missing`)), 'http_status');
    assert.equal(await reason(fetcher.fetch(`${base}/html`)), 'wrong_type');
    assert.equal(await reason(fetcher.fetch(`${base}/liar.png`)), 'wrong_type');
    await fetcher.close();
  });

  test('a body over the bound is refused by its length, or by reading no further than the bound', async () => {
    const fetcher = new ImageFetcher(limits);
    assert.equal(await reason(fetcher.fetch(`${base}/declared-big`)), 'too_large');
    assert.equal(await reason(fetcher.fetch(`${base}/endless`)), 'too_large');
    // The reader stopped near the bound: the server could write no more than the socket buffers hold.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(bigWritten < 8 * 1_048_576, `server wrote ${bigWritten} bytes before the reader stopped`);
    await fetcher.close();
  });

  test('a server that stalls is cut at the deadline', async () => {
    const fetcher = new ImageFetcher({ ...limits, timeoutMs: 300 });
    const started = performance.now();
    assert.equal(await reason(fetcher.fetch(`${base}/stall`)), 'timeout');
    assert.ok(performance.now() - started < 2_000);
    await fetcher.close();
  });

  test('redirects are followed up to the bound', async () => {
    const fetcher = new ImageFetcher(limits);
    assert.equal((await fetcher.fetch(`${base}/hop/2`)).contentType, 'image/png');
    assert.equal(await reason(fetcher.fetch(`${base}/hop/3`)), 'too_many_redirects');
    await fetcher.close();
  });

  test('without private networks allowed, loopback, metadata addresses and names resolving to them are refused', async () => {
    const fetcher = new ImageFetcher({ ...limits, allowPrivateNetwork: false });
    assert.equal(await reason(fetcher.fetch(`${base}/ok.png`)), 'blocked_address');
    assert.equal(await reason(fetcher.fetch(`http://localhost:${new URL(base).port}/ok.png`)), 'blocked_address');
    assert.equal(await reason(fetcher.fetch('http://[::ffff:127.0.0.1]/x.png')), 'blocked_address');
    assert.equal(await reason(fetcher.fetch('file:///etc/passwd')), 'bad_url');
    await fetcher.close();
  });

  test('the run being aborted ends the fetch with the abort, not a failure reason', async () => {
    const fetcher = new ImageFetcher(limits);
    const run = new AbortController();
    const pending = fetcher.fetch(`${base}/stall`, run.signal);
    setTimeout(() => run.abort(new Error('run stopped')), 50);
    await assert.rejects(pending, (err) => !(err instanceof ImageFetchError));
    await fetcher.close();
  });
});

test('private address ranges, and their IPv6 forms', () => {
  for (const a of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '::ffff:7f00:1', '64:ff9b::a9fe:a9fe', 'not-an-ip']) {
    assert.equal(isPrivateAddress(a), true, a);
  }
  for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPrivateAddress(a), false, a);
});

test('image signatures and logged URLs', () => {
  assert.equal(sniffImageType(PNG), 'image/png');
  assert.equal(sniffImageType(Buffer.from([0xff, 0xd8, 0xff, 0xe0])), 'image/jpeg');
  assert.equal(sniffImageType(Buffer.from('GIF89a')), 'image/gif');
  assert.equal(sniffImageType(Buffer.from('RIFF\0\0\0\0WEBPVP8 ')), 'image/webp');
  assert.equal(sniffImageType(Buffer.from('<svg')), null);
  assert.equal(redactedUrl('https://cdn.example/a/b.png?token=secret#x'), 'https://cdn.example/a/b.png');
});
