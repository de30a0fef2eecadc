/**
 * The result codes of the state scripts, by name. A script answers a number (Lua has no enums); each
 * table here is the one place that number is read, so a script and its caller cannot drift apart
 * silently: an unknown code is a `ScriptResultError`, never a guess.
 */

/** `session-acquire`: whether the query may run now, and if not, why. */
export const ACQUIRE_RESULTS = {
  acquired: 1,
  'session-busy': 0,
  'not-head': -1,
  settling: -2,
  'pipeline-full': -3,
  finished: -4,
  aggregating: -5,
} as const;

/** `reply-enqueue`: what became of a runner event's parts. */
export const ENQUEUE_RESULTS = { stored: 1, duplicate: 0, superseded: -1, ended: -2 } as const;

/** `reply-commit`: whether the session's sender goes on (with `more`, the next batch follows the code). */
export const COMMIT_RESULTS = { more: 1, idle: 2, lost: 0 } as const;

/** `session-release`, `session-extend`, `reply-renew`: whether the caller held what it named. */
export const HELD_RESULTS = { held: 1, 'not-held': 0 } as const;

/** A state script answered a code its table does not know: the script and this package disagree. */
export class ScriptResultError extends Error {
  override readonly name = 'ScriptResultError';
  readonly code = 'SCRIPT_RESULT_UNKNOWN';
  constructor(
    readonly script: string,
    readonly reply: unknown,
  ) {
    super(`state script ${script} answered ${JSON.stringify(reply)}, which it does not define`);
  }
}

/** The name of `reply` in `table`. */
export function resultName<T extends Record<string, number>>(script: string, table: T, reply: unknown): keyof T & string {
  const code = Number(reply);
  for (const [name, value] of Object.entries(table)) if (value === code) return name;
  throw new ScriptResultError(script, reply);
}
