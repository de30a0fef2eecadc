import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Reads a request body, refusing more than `limit` bytes so a runaway client cannot exhaust memory. */
export function readBody(req: IncomingMessage, limit = 64 * 1024 * 1024): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error(`body larger than ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A request's JSON object body; an empty, unparsable or non-object body is `{}` (the fake then answers as the platform does to a missing field). */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, any>> {
  const raw = (await readBody(req)).toString();
  try {
    const parsed: unknown = raw ? JSON.parse(raw) : {};
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.fromEntries(Object.entries(parsed)) : {};
  } catch {
    return {};
  }
}

export async function listen(server: Server, port = 0, host = '127.0.0.1'): Promise<string> {
  // Fakes are hit over keep-alive connections by benchmarks; outlive typical client idle timeouts.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  return `http://${host}:${addr.port}`;
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}

/** Ends a fake's WebSocket server and the HTTP server under it: every client cut off, then the server closed. */
export async function closeWebSocketServer(wss: { clients: Set<{ terminate(): void }>; close(): void }, server: Server): Promise<void> {
  for (const ws of wss.clients) ws.terminate();
  wss.close();
  await closeServer(server);
}

/**
 * Resolves once `predicate(items)` holds, checking now and after every `notify()`; rejects after
 * `timeoutMs` with what was seen, so a failing test says more than "timed out".
 */
export class Waiters<T> {
  #waiters = new Set<{ check: () => boolean }>();

  constructor(
    private readonly items: () => T[],
    private readonly what: string,
  ) {}

  notify(): void {
    for (const w of [...this.#waiters]) w.check();
  }

  waitFor(predicate: (items: T[]) => boolean, timeoutMs = 5000): Promise<T[]> {
    return new Promise((resolve, reject) => {
      const waiter = {
        check: () => {
          let ok: boolean;
          try {
            ok = predicate(this.items());
          } catch (err) {
            this.#waiters.delete(waiter);
            clearTimeout(timer);
            reject(err);
            return true;
          }
          if (!ok) return false;
          this.#waiters.delete(waiter);
          clearTimeout(timer);
          resolve(this.items());
          return true;
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`waitFor timed out after ${timeoutMs} ms with ${this.items().length} ${this.what} received`));
      }, timeoutMs);
      if (!waiter.check()) this.#waiters.add(waiter);
    });
  }
}
