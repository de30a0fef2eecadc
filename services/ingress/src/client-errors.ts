import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpBotError } from '@conveyor/http-bot';

/** Node's own answers to the other parser errors, as its default `clientError` handling writes them. */
const NODE_ANSWERS: Record<string, string> = {
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n',
  ERR_HTTP_REQUEST_TIMEOUT: 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n',
};
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';

/** How long a refused connection may stay half-closed (the client still sending what it had started) before it is cut. */
const LINGER_MS = 10_000;

/** The 431 as bytes on the wire: LangBot's envelope, like every other rejection of the ingress. */
export function headersTooLargeResponse(): string {
  const { status, body } = HttpBotError.headersTooLarge();
  const text = JSON.stringify(body);
  return [
    `HTTP/1.1 ${status} Request Header Fields Too Large`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    '',
    text,
  ].join('\r\n');
}

/**
 * Answers the requests Node's HTTP parser refuses before any route sees them. Headers over Node's
 * 16 KiB bound (`HPE_HEADER_OVERFLOW`) get 431 with LangBot's envelope instead of Node's bare status
 * line; every other parser error keeps Node's own answer. The answer is written and the connection
 * ended (not destroyed: a reset could discard the answer while the client is still sending the rest of
 * its headers); a client that never closes its side is cut after LINGER_MS.
 */
export function answerClientErrors(server: Server, logger: { warn(obj: object, msg: string): void }): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // The parser reports every later chunk of a refused request again: answer once.
    if (!socket.writable || socket.destroyed) return;
    // A response of an earlier request on this connection has begun: nothing may be written into it.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      logger.warn({ code: err.code }, 'request headers over the 16 KiB limit; answered 431');
      socket.end(headersTooLargeResponse());
    } else {
      socket.end(NODE_ANSWERS[err.code ?? ''] ?? BAD_REQUEST);
    }
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
}
