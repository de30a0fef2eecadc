import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { timingSafeEqual } from 'node:crypto';
import { WebSocketServer } from 'ws';
import type { OneBotConfig } from './config.js';
import { OneBotSocket, type OneBotSocketOptions } from './socket.js';

/** The access token as OneBot v11 implementations send it: `Authorization: Bearer|Token <t>` or `?access_token=`. */
export function presentedToken(req: IncomingMessage): string {
  const auth = req.headers.authorization ?? '';
  const m = /^(?:Bearer|Token)\s+(.+)$/i.exec(auth);
  if (m) return m[1].trim();
  return new URL(req.url ?? '/', 'http://local').searchParams.get('access_token') ?? '';
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
}

export interface ReverseListener {
  /** The implementation's connection, while one is open. */
  current(): OneBotSocket | undefined;
  /** Resolves with the reason once the listener stopped by itself (a server error). */
  ended: Promise<string>;
  close(reason: string): Promise<void>;
}

/**
 * Reverse WebSocket: listens on `host:port` for the implementation, checks its access token (401
 * otherwise, and always when the bot has none), and keeps one connection: a second one while the first is open gets 409, so exactly one
 * implementation session feeds the bot. Only the gateway replica holding the bot listens; the others
 * have nothing on that port, and the implementation's reconnection lands on the holder.
 */
export async function listenReverse(config: OneBotConfig, socketOptions: Omit<OneBotSocketOptions, 'url' | 'accessToken' | 'handshakeTimeoutMs'>): Promise<ReverseListener> {
  let current: OneBotSocket | undefined;
  let resolveEnded!: (reason: string) => void;
  const ended = new Promise<string>((resolve) => (resolveEnded = resolve));
  const server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' });
    res.end('OneBot reverse WebSocket only\n');
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    // No token configured refuses everyone: the schema requires one in reverse mode, and a listener
    // reached without it (a config that bypassed the schema) must not hand the bot to the first caller.
    if (!config['access-token'] || !sameToken(presentedToken(req), config['access-token'])) return refuse(socket, 401, 'Unauthorized');
    if (current) return refuse(socket, 409, 'Conflict');
    wss.handleUpgrade(req, socket, head, (ws) => {
      const s = OneBotSocket.accept(ws, socketOptions);
      current = s;
      void s.ended.then(() => {
        if (current === s) current = undefined;
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => resolveEnded(`listener error: ${err.message}`));
  return {
    current: () => current,
    ended,
    async close(reason) {
      await current?.close(reason);
      wss.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      resolveEnded(`closed: ${reason}`);
    },
  };
}
