import { createServer, type IncomingHttpHeaders } from 'node:http';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, headerValue, verifyInbound, type VerifyFailureReason } from '@conveyor/http-bot';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/**
 * An integrator's `callback_url`: records every HTTP-bot callback and checks its signature over the
 * raw bytes exactly as a receiver must (LangBot's inbound check, with the outbound secret).
 */

export interface ReceivedCallback {
  /** 1-based arrival order. */
  n: number;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  /** The parsed body, or null when it was not JSON. */
  json: any;
  signatureValid: boolean;
  signatureFailure?: VerifyFailureReason;
  /** The status this receiver answered with. */
  status: number;
  /** `performance.now()` when the body was complete, for latency measurements in the same process. */
  receivedAt: number;
}

export interface CallbackReceiver {
  url: string;
  received: ReceivedCallback[];
  waitFor(predicate: (received: ReceivedCallback[]) => boolean, timeoutMs?: number): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

export interface CallbackReceiverOptions {
  secret: string;
  port?: number;
  /** The address to listen on; default 127.0.0.1 (a container listens on 0.0.0.0). */
  host?: string;
  /** Status to answer the n-th callback with (1-based); default 200. */
  respond?: (n: number, callback: Omit<ReceivedCallback, 'status'>) => number | Promise<number>;
  /** Clock for the ±300 s window, in Unix seconds; default the real clock. */
  nowSeconds?: () => number;
}

export async function startCallbackReceiver(options: CallbackReceiverOptions): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  const waiters = new Waiters(() => received, 'callbacks');
  let count = 0;

  const server = createServer(async (req, res) => {
    try {
      const rawBody = await readBody(req);
      const n = ++count;
      const verdict = verifyInbound({
        secret: options.secret,
        timestampHeader: headerValue(req.headers, HEADER_TIMESTAMP),
        signatureHeader: headerValue(req.headers, HEADER_SIGNATURE),
        rawBody,
        nowSeconds: options.nowSeconds ? options.nowSeconds() : Date.now() / 1000,
      });
      let json: unknown = null;
      try {
        json = JSON.parse(rawBody.toString('utf8'));
      } catch {
        json = null;
      }
      const receivedAt = performance.now();
      const base = {
        n,
        receivedAt,
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        json,
        signatureValid: verdict.ok,
        ...(verdict.ok ? {} : { signatureFailure: verdict.reason }),
      };
      const status = options.respond ? await options.respond(n, base) : 200;
      received.push({ ...base, status });
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(status < 400 ? '{"ok":true}' : '{"ok":false}');
      waiters.notify();
    } catch (err) {
      res.writeHead(500);
      res.end(String(err));
    }
  });

  const url = await listen(server, options.port, options.host);
  return {
    url: `${url}/callback`,
    received,
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    close: () => closeServer(server),
  };
}
