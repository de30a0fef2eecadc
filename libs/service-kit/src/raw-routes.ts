import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { RequestLoggingMiddleware } from './request-logging.js';

/**
 * Routes a service serves straight from the HTTP server, ahead of Express and Nest: the request's
 * handling when the request is one of them, undefined for every other request (the framework's).
 */
export type RawRoutes = (req: IncomingMessage, res: ServerResponse) => Promise<void> | undefined;

/**
 * Puts `routes` ahead of the framework's listeners on `server`. A hot route (a platform's webhook)
 * then costs no router, guard or handler chain; it gets the request logging the framework applies to
 * every request, and a handler that fails unexpectedly is answered 500 as Nest would. Instrumentation
 * of the HTTP server (the request's span) is unchanged: it wraps the server's emit, not the listeners.
 */
export function serveBeforeFramework(server: Server, routes: RawRoutes, logging: RequestLoggingMiddleware, onError: (err: unknown) => void): void {
  const framework = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let handled: Promise<void> | undefined;
    try {
      handled = routes(req, res);
    } catch (err) {
      handled = Promise.reject(err);
    }
    if (handled === undefined) {
      for (const listener of framework) listener.call(server, req, res);
      return;
    }
    logging(req, res, () => undefined);
    handled.catch((err: unknown) => {
      onError(err);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // Nest's own answer to a handler that failed unexpectedly.
      writeJson(res, 500, { statusCode: 500, message: 'Internal server error' });
    });
  });
}

/**
 * A JSON answer from a raw route, as Express's `res.status(status).json(body)` writes it (without its
 * ETag, which no caller of these routes reads): a content type among `headers` is kept.
 */
export function writeJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  for (const [k, v] of Object.entries(headers ?? {})) res.setHeader(k, v);
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  writeBody(res, status, JSON.stringify(body) ?? '');
}

/** A plain-text answer from a raw route, as Express's `res.type('text/plain').send(text)` writes it: always text/plain. */
export function writeText(res: ServerResponse, status: number, text: string, headers?: Record<string, string>): void {
  for (const [k, v] of Object.entries(headers ?? {})) res.setHeader(k, v);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  writeBody(res, status, text);
}

function writeBody(res: ServerResponse, status: number, text: string): void {
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.statusCode = status;
  res.end(text);
}
