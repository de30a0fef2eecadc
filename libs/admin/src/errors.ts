import type { AdminApi } from '@conveyor/contracts';

const STATUS: Record<AdminApi.AdminErrorCode, number> = {
  validation_failed: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  version_conflict: 409,
  conflict: 409,
  precondition_required: 428,
  setup_required: 409,
  rate_limited: 429,
  method_not_allowed: 405,
  not_configured: 503,
  unavailable: 502,
  internal: 500,
};

/** A failure the API answers with its own status and body; classified by `code`, never by message. */
export class AdminApiError extends Error {
  override name = 'AdminApiError';
  readonly statusCode: number;

  constructor(
    readonly code: AdminApi.AdminErrorCode,
    message: string,
    readonly details: { field?: string; issues?: AdminApi.AdminIssue[]; currentVersion?: number; retryAfterSeconds?: number; reason?: string } = {},
  ) {
    super(message);
    this.statusCode = STATUS[code];
  }

  toBody(): AdminApi.AdminError {
    return { statusCode: this.statusCode, code: this.code, message: this.message, ...this.details };
  }

  static notFound(resource: string, id: string): AdminApiError {
    return new AdminApiError('not_found', `${resource} ${JSON.stringify(id)} does not exist`, { field: 'path.id' });
  }

  static invalid(field: string, message: string): AdminApiError {
    return new AdminApiError('validation_failed', `${field}: ${message}`, { field, issues: [{ path: field, message }] });
  }
}

/** `['config', 'ai', 0]` → `config.ai[0]`. */
export function keyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out ? `.${String(key)}` : String(key);
  return out;
}

/** A zod failure as the API's 400: every issue with its key path under `where` (`body`, `query`). */
export function validationError(where: string, issues: ReadonlyArray<{ path: readonly PropertyKey[]; message: string }>): AdminApiError {
  const listed = issues.map((issue) => ({ path: keyPath([where, ...issue.path]), message: issue.message }));
  const first = listed[0] ?? { path: where, message: 'invalid' };
  const more = listed.length > 1 ? ` (and ${listed.length - 1} more)` : '';
  return new AdminApiError('validation_failed', `${first.path}: ${first.message}${more}`, { field: first.path, issues: listed });
}
