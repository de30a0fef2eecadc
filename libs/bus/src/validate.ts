import type { z } from 'zod';

/** A zod error as one line per issue, `path: message`, e.g. `chain.0.type: Invalid input`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}
