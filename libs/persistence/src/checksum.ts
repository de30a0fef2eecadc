// Prisma's migration checksum, as in prisma-engines
// schema-engine/connectors/schema-connector/src/checksum.rs: the SHA-256 of the script's UTF-8
// text, lower-case hex, zero-padded to 64 characters. The script is hashed as read, without
// normalizing line endings; only the comparison tolerates LF/CRLF conversions by git, and accepts
// the non-zero-padded hex that old engine versions wrote (prisma-engines#1887).
import { createHash } from 'node:crypto';

function sha256(script: string): Buffer {
  return createHash('sha256').update(script, 'utf8').digest();
}

export function migrationChecksum(script: string): string {
  return sha256(script).toString('hex');
}

function unpaddedHex(digest: Buffer): string {
  return [...digest].map((b) => b.toString(16)).join('');
}

export function scriptMatchesChecksum(script: string, checksum: string): boolean {
  const variants = [script, script.replaceAll('\r\n', '\n'), script.replaceAll('\n', '\r\n')];
  return variants.some((variant) => {
    const digest = sha256(variant);
    const rendered = checksum.length !== 0 && checksum.length !== 64 ? unpaddedHex(digest) : digest.toString('hex');
    return rendered === checksum;
  });
}
