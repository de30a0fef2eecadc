import { randomBytes } from 'node:crypto';

/** A name unique to this test run, valid as a subject prefix, database name and stream name part. */
export function uniqueName(kind: string): string {
  return `${kind}${randomBytes(5).toString('hex')}`;
}
