import { createHmac, timingSafeEqual } from 'node:crypto';

export const HEADER_TIMESTAMP = 'X-LB-Timestamp';
export const HEADER_SIGNATURE = 'X-LB-Signature';
export const HEADER_IDEMPOTENCY = 'X-LB-Idempotency-Key';
/** Inbound timestamps may be this far from server time, either way, inclusive, as in LangBot. */
export const REPLAY_WINDOW_SECONDS = 300;

/** `no_secret`: the bot has no inbound secret, so no request can be verified (an empty key would verify any). */
export type VerifyFailureReason = 'no_secret' | 'missing_headers' | 'bad_timestamp' | 'expired' | 'signature_mismatch';
export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailureReason };

/** `sha256=` + hex HMAC-SHA256(secret, "<timestamp>." + rawBody), LangBot's scheme. */
export function sign(secret: string, timestamp: string | number, rawBody: Uint8Array | string): string {
  const hmac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  hmac.update(Buffer.from(`${timestamp}.`, 'utf8'));
  hmac.update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody);
  return `sha256=${hmac.digest('hex')}`;
}

// Python's float() grammar: optional whitespace, sign, digits with single underscores, inf/nan.
const DIGITS = '\\d(?:_?\\d)*';
const PY_FLOAT = new RegExp(
  `^[+-]?(?:(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?|inf(?:inity)?|nan)$`,
  'i',
);
// str.strip() with no argument also removes the ASCII separators \x1c-\x1f.
const PY_WHITESPACE = /^[\s\x1c-\x1f\x85]+|[\s\x1c-\x1f\x85]+$/g;

/**
 * `int(float(text))`, or null where Python raises. Infinity is null too: LangBot lets that
 * OverflowError escape as a 500; here it is `bad_timestamp`, since no legitimate client sends it.
 */
export function parsePythonTimestamp(text: string): number | null {
  const trimmed = text.replace(PY_WHITESPACE, '');
  if (!PY_FLOAT.test(trimmed)) return null;
  const value = Number(trimmed.replace(/_/g, ''));
  if (!Number.isFinite(value)) return null;
  return Math.trunc(value);
}

/** Constant-time for equal lengths; the length itself is not secret (always 71 for a valid one). */
function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

export interface VerifyInboundInput {
  secret: string;
  timestampHeader: string | null | undefined;
  signatureHeader: string | null | undefined;
  rawBody: Uint8Array | string;
  /** Server time in (possibly fractional) Unix seconds. */
  nowSeconds: number;
}

/** LangBot's inbound signature checks in its order, after refusing an empty secret; the first failure decides the reason. */
export function verifyInbound(input: VerifyInboundInput): VerifyResult {
  const { timestampHeader, signatureHeader } = input;
  if (input.secret === '') return { ok: false, reason: 'no_secret' };
  if (!timestampHeader || !signatureHeader) return { ok: false, reason: 'missing_headers' };
  const ts = parsePythonTimestamp(timestampHeader);
  if (ts === null) return { ok: false, reason: 'bad_timestamp' };
  if (Math.abs(Math.floor(input.nowSeconds) - ts) > REPLAY_WINDOW_SECONDS) return { ok: false, reason: 'expired' };
  // The raw header text is signed, not the parsed integer: "1718000000.0" must be signed as such.
  const expected = sign(input.secret, timestampHeader, input.rawBody);
  if (!safeEqual(expected, signatureHeader)) return { ok: false, reason: 'signature_mismatch' };
  return { ok: true };
}
