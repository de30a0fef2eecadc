/**
 * What closing a `ws` WebSocket needs of it; platform-kit does not depend on `ws`, the platform
 * packages that hold sockets do.
 */
export interface ClosableWebSocket {
  readonly readyState: number;
  close(code?: number, reason?: string): void;
  terminate(): void;
  once(event: 'close', listener: () => void): unknown;
}

/** `WebSocket.readyState` values (RFC 6455 as the WHATWG API and `ws` number them). */
const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;
/** How long the peer gets to answer the close handshake before the socket is cut. */
export const WEBSOCKET_CLOSE_GRACE_MS = 2_000;
/** A close frame's reason is at most 123 bytes; a shorter cut keeps multi-byte text within it. */
const MAX_CLOSE_REASON_CHARS = 100;

/**
 * Closes a held connection's socket with `code`, and resolves once it is closed: after the peer's
 * close frame, or after `WEBSOCKET_CLOSE_GRACE_MS` by cutting it, so a silent peer never holds up a
 * gateway's drain.
 */
export function closeWebSocket(ws: ClosableWebSocket, code: number, reason: string): Promise<void> {
  if (ws.readyState === OPEN || ws.readyState === CONNECTING) ws.close(code, reason.slice(0, MAX_CLOSE_REASON_CHARS));
  return new Promise((resolve) => {
    if (ws.readyState === CLOSED) return resolve();
    const timer = setTimeout(() => {
      ws.terminate();
      resolve();
    }, WEBSOCKET_CLOSE_GRACE_MS);
    timer.unref();
    ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
