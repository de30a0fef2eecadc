import { createHash, timingSafeEqual } from 'node:crypto';

/** Shortest shared secret accepted: anything shorter could be guessed over the network. */
export const MIN_BEARER_TOKEN_CHARS = 16;

/**
 * A shared secret presented as `Authorization: Bearer <token>`. Both sides are hashed before the
 * constant-time comparison, so neither the token's characters nor its length show in response times
 * (timingSafeEqual itself needs inputs of equal length).
 */
export class BearerToken {
  private readonly digest: Buffer;

  constructor(token: string) {
    if (token.length < MIN_BEARER_TOKEN_CHARS) throw new RangeError(`a bearer token needs at least ${MIN_BEARER_TOKEN_CHARS} characters`);
    this.digest = sha256(token);
  }

  /** Whether an `Authorization` header value carries the token (the scheme name is case-insensitive). */
  matches(authorization: string | undefined): boolean {
    const presented = /^bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
    // Hashed and compared even when absent, so a missing token costs what a wrong one does.
    return timingSafeEqual(sha256(presented ?? ''), this.digest) && presented !== undefined;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
