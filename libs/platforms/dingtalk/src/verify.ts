import { createHmac, timingSafeEqual } from 'node:crypto';

export const DINGTALK_TIMESTAMP_HEADER = 'timestamp';
export const DINGTALK_SIGN_HEADER = 'sign';
/** DingTalk's rule for a callback: its `timestamp` (ms) is within an hour of the receiver's clock. */
export const DINGTALK_SIGN_WINDOW_MS = 60 * 60 * 1000;

/** Base64 of the HMAC-SHA256 of `${timestamp}\n${appSecret}` keyed with the app secret, as DingTalk signs a callback. */
export function dingtalkSign(timestamp: string, appSecret: string): string {
  return createHmac('sha256', appSecret).update(`${timestamp}\n${appSecret}`).digest('base64');
}

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/** Slack for replicas' clocks disagreeing: a claim outlives the window by this much. */
const CLOCK_SKEW_MS = 60_000;

/**
 * How long a verified (timestamp, sign) pair stays acceptable from `now`: until its timestamp is an
 * hour behind the clock (a timestamp ahead of the clock is valid for up to two hours), plus skew.
 */
export function dingtalkSignTtlMs(timestamp: string, now: Date): number {
  return Math.max(1, Number(timestamp) + DINGTALK_SIGN_WINDOW_MS - now.getTime()) + CLOCK_SKEW_MS;
}

/** The `timestamp` and `sign` headers of a callback checked: present, within the window, signed with the app secret (constant time). */
export function verifyDingtalkSignature(appSecret: string, timestamp: string | undefined, sign: string | undefined, now: Date): SignatureCheck {
  if (!timestamp || !sign) return { ok: false, reason: 'missing timestamp or sign header' };
  if (!/^\d{1,16}$/.test(timestamp)) return { ok: false, reason: 'timestamp is not milliseconds since the epoch' };
  if (Math.abs(now.getTime() - Number(timestamp)) > DINGTALK_SIGN_WINDOW_MS) return { ok: false, reason: 'timestamp is more than an hour off' };
  const want = Buffer.from(dingtalkSign(timestamp, appSecret), 'utf8');
  const got = Buffer.from(sign, 'utf8');
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'sign does not match' };
  return { ok: true };
}
