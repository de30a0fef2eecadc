import { createHmac, timingSafeEqual } from 'node:crypto';

export const SLACK_SIGNATURE_HEADER = 'x-slack-signature';
export const SLACK_TIMESTAMP_HEADER = 'x-slack-request-timestamp';
/** Slack's advice: refuse a request whose timestamp is more than five minutes off, so a captured one cannot be replayed later. */
export const SLACK_MAX_SKEW_S = 300;

export type SlackVerifyFailure = 'missing_headers' | 'bad_timestamp' | 'expired' | 'signature_mismatch';

/** `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}` with the signing secret, as Slack signs a request. */
export function slackSignature(secret: string, timestamp: string, body: Buffer): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(body).digest('hex')}`;
}

/** Checks a request's signature (constant time) and its timestamp window. */
export function verifySlackRequest(
  secret: string,
  signature: string | undefined,
  timestamp: string | undefined,
  body: Buffer,
  now: Date,
): { ok: true } | { ok: false; reason: SlackVerifyFailure } {
  if (!signature || !timestamp) return { ok: false, reason: 'missing_headers' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'bad_timestamp' };
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > SLACK_MAX_SKEW_S) return { ok: false, reason: 'expired' };
  const want = Buffer.from(slackSignature(secret, timestamp, body), 'utf8');
  const got = Buffer.from(signature, 'utf8');
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'signature_mismatch' };
  return { ok: true };
}
