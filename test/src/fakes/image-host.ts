import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { deflateSync } from 'node:zlib';
import { closeServer, listen } from './http-util.js';

/** A valid 1×1 PNG (one opaque red pixel), built so its bytes are a real image a model could decode. */
export function tinyPng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0);
  header.writeUInt32BE(1, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  const pixels = deflateSync(Buffer.from([0, 255, 0, 0]));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', pixels), chunk('IEND', Buffer.alloc(0))]);
}

export interface FakeImageHost {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Paths requested, in order. */
  requests: string[];
  /** Bytes of `/huge.png` the host managed to write before the client stopped reading. */
  hugeBytesWritten(): number;
  close(): Promise<void>;
}

/**
 * A fake platform file host, the kind of server image URLs in inbound messages point at. Paths:
 * `/red.png` (a real PNG), `/missing.png` (404), `/huge.png` (an image/png body of `hugeBytes`, sent
 * without a length so only the reader's bound stops it), `/page.html` (text/html),
 * `/slow.png` (headers, then nothing).
 */
export async function startFakeImageHost(options: { hugeBytes?: number } = {}): Promise<FakeImageHost> {
  const png = tinyPng();
  const hugeBytes = options.hugeBytes ?? 64 * 1_048_576;
  const requests: string[] = [];
  let hugeWritten = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    requests.push(path);
    if (path === '/red.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      res.end(png);
    } else if (path === '/missing.png') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    } else if (path === '/huge.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      const block = Buffer.concat([png, Buffer.alloc(64 * 1024 - png.length)]);
      const pump = () => {
        while (hugeWritten < hugeBytes && !res.destroyed) {
          hugeWritten += block.length;
          if (!res.write(block)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      res.on('error', () => undefined);
      pump();
    } else if (path === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<html><body>not an image</body></html>');
    } else if (path === '/slow.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.flushHeaders();
      // Never finishes: the client's deadline has to end it (the server's close drops the socket).
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  const url = await listen(server);
  return { url, requests, hugeBytesWritten: () => hugeWritten, close: () => closeServer(server) };
}
