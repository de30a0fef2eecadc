import { randomUUID } from 'node:crypto';
import type { VerifyFailureReason } from './verify.js';

/** The adapter's error envelope, `{code, msg, data: null}`. */
export interface AdapterErrorBody {
  code: number;
  msg: string;
  data: null;
}

/** Bodies of LangBot's web framework, before the adapter runs; as in LangBot they do not use the envelope. */
export type FrameworkErrorBody =
  | { error: string }
  | { code: 'blocking_work_capacity_exceeded'; msg: string }
  | { code: 'internal_error'; msg: 'Internal server error'; request_id: string };

export interface HttpBotError {
  status: number;
  body: AdapterErrorBody | FrameworkErrorBody;
  headers?: Record<string, string>;
}

function envelope(status: number, code: number, msg: string): HttpBotError {
  return { status, body: { code, msg, data: null } };
}

const MAX_REQUEST_ID_LENGTH = 128;

/** The caller's X-Request-Id when it is short and free of control characters, else a fresh UUID4. */
export function requestIdFor(header: string | null | undefined): string {
  if (header && header.length <= MAX_REQUEST_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(header)) return header;
  return randomUUID();
}

/** Every status LangBot's HTTP-bot route can answer with, by cause. */
export const HttpBotError = {
  // framework responses, before the adapter runs
  botNotFound: (): HttpBotError => ({ status: 404, body: { error: 'Bot not found' } }),
  botDisabled: (): HttpBotError => ({ status: 403, body: { error: 'Bot is disabled' } }),
  adapterUnsupported: (): HttpBotError => ({
    status: 501,
    body: { error: 'Adapter does not support unified webhook' },
  }),
  blockingWorkCapacity: (msg: string): HttpBotError => ({
    status: 429,
    body: { code: 'blocking_work_capacity_exceeded', msg },
  }),
  internal: (requestId: string): HttpBotError => ({
    status: 500,
    body: { code: 'internal_error', msg: 'Internal server error', request_id: requestId },
    headers: { 'X-Request-Id': requestId },
  }),

  // adapter envelope, in LangBot's check order
  unknownSubPath: (path: string): HttpBotError => envelope(400, 40001, `unknown sub-path: ${path}`),
  messageTooLarge: (): HttpBotError => envelope(413, 41301, 'message too large'),
  /** Request headers past Node's 16 KiB bound: the HTTP parser refuses them before any route (the ingress' clientError handler answers). */
  headersTooLarge: (): HttpBotError => envelope(431, 43101, 'request headers too large'),
  invalidSignature: (reason: VerifyFailureReason): HttpBotError =>
    envelope(401, 40101, `invalid signature: ${reason}`),
  invalidJson: (): HttpBotError => envelope(400, 40001, 'body is not valid JSON'),
  notObject: (): HttpBotError => envelope(400, 40001, 'body must be a JSON object'),
  missingFields: (): HttpBotError => envelope(400, 40001, 'session_id and message are required'),
  sessionIdRequired: (): HttpBotError => envelope(400, 40001, 'session_id is required'),
  idempotencyReplay: (): HttpBotError => envelope(409, 40901, 'idempotency key already accepted'),
  idempotencyCapacity: (): HttpBotError => envelope(503, 50301, 'idempotency capacity reached; retry later'),
  parseFailed: (detail: string): HttpBotError => envelope(400, 40001, `failed to parse message: ${detail}`),
  noListener: (): HttpBotError => envelope(500, 50001, 'no listener registered for event type'),
  syncInFlight: (): HttpBotError => envelope(409, 40901, 'a sync request is already in flight for this session'),
  overloaded: (): HttpBotError => envelope(503, 50301, 'too many inbound messages are already being processed'),

  /**
   * The bot's stored settings fail its schema (e.g. an empty inbound_secret while signatures are
   * required, in a row written before that was refused): every request is refused until they are
   * fixed. The caller is not told which setting; the ingress logs it.
   */
  misconfigured: (): HttpBotError => envelope(500, 50002, 'bot is misconfigured; requests are refused until its settings are fixed'),

  // Conveyor's own bounds, which LangBot does not have, answered like its other field checks
  invalidField: (detail: string): HttpBotError => envelope(400, 40001, detail),
} as const;
