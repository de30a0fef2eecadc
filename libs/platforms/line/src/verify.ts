import { createHmac, timingSafeEqual } from 'node:crypto';

export const LINE_SIGNATURE_HEADER = 'x-line-signature';

/** Base64 of the HMAC-SHA256 of the body with the channel secret, as LINE signs a webhook request. */
export function lineSignature(channelSecret: string, body: Buffer): string {
  return createHmac('sha256', channelSecret).update(body).digest('base64');
}

/** Constant-time check of `X-Line-Signature` over the exact body. */
export function verifyLineSignature(channelSecret: string, header: string | undefined, body: Buffer): boolean {
  if (!header) return false;
  const want = Buffer.from(lineSignature(channelSecret, body), 'utf8');
  const got = Buffer.from(header, 'utf8');
  return want.length === got.length && timingSafeEqual(want, got);
}
