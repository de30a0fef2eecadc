// The admin API client: every request goes to ADMIN_API_BASE on the console's own origin, with the
// session cookie the browser keeps (HTTP-only, so the page never sees it). Answers are checked with the
// shared zod schemas, so a console and a service that disagree fail with a clear message, not a blank page.
import { AdminApi } from '@conveyor/contracts';
import type { z } from 'zod';

export type ErrorCode = AdminApi.AdminError['code'] | 'network' | 'bad_response';

/** A failed call: the API's classified error, or the console's own (`network`, `bad_response`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    readonly issues: AdminApi.AdminIssue[] = [],
    readonly currentVersion?: number,
  ) {
    super(message);
  }
}

/** What the user should read for a failed call; a stale write gets the reload advice. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.code === 'version_conflict') return 'Changed by someone else since you opened it: reload, then make your change again.';
    const where = err.field ? ` (${err.field})` : '';
    const issues = err.issues.length > 1 ? `: ${err.issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}` : '';
    return `${err.message}${where}${issues}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export interface RequestOptions {
  body?: unknown;
  /** The version the write is based on, sent as If-Match. */
  version?: number;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal;
  /** Headers of the call itself (the debug chat's session key). */
  headers?: Record<string, string>;
}

type Listener = () => void;
const unauthenticatedListeners = new Set<Listener>();

/** Called whenever the API answers 401, so the app can go back to the sign-in page. */
export function onUnauthenticated(listener: Listener): () => void {
  unauthenticatedListeners.add(listener);
  return () => unauthenticatedListeners.delete(listener);
}

export function apiUrl(path: string, query?: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `${AdminApi.ADMIN_API_BASE}${path}${qs ? `?${qs}` : ''}`;
}

/** One call. `schema` checks the answer (204 answers carry none, pass `null`). */
export async function request<S extends z.ZodType>(method: string, path: string, schema: S, options?: RequestOptions): Promise<z.output<S>>;
export async function request(method: string, path: string, schema: null, options?: RequestOptions): Promise<void>;
export async function request(method: string, path: string, schema: z.ZodType | null, options: RequestOptions = {}): Promise<unknown> {
  const headers: Record<string, string> = { ...options.headers, accept: 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.version !== undefined) headers['if-match'] = String(options.version);
  let res: Response;
  try {
    res = await fetch(apiUrl(path, options.query), {
      method,
      headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', `The admin service could not be reached (${err instanceof Error ? err.message : String(err)}).`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    if (res.status === 401) for (const l of unauthenticatedListeners) l();
    const parsed = AdminApi.AdminError.safeParse(json);
    if (parsed.success) {
      const e = parsed.data;
      const wait = e.retryAfterSeconds !== undefined ? ` Try again in ${e.retryAfterSeconds} s.` : '';
      throw new ApiError(res.status, e.code, `${e.message}${wait}`, e.field, e.issues ?? [], e.currentVersion);
    }
    throw new ApiError(res.status, res.status === 401 ? 'unauthenticated' : 'internal', `HTTP ${res.status} from ${method} ${path}`);
  }
  if (schema === null) return undefined;
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new ApiError(res.status, 'bad_response', `Unexpected answer from ${method} ${path}: ${first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'invalid'}`);
  }
  return parsed.data;
}

/** Every item of a paged list, following `nextCursor`, at most `maxItems` (the page then says there are more). */
export async function listAll<S extends z.ZodType>(path: string, item: S, options: { query?: RequestOptions['query']; maxItems?: number; signal?: AbortSignal } = {}): Promise<{ items: z.output<S>[]; more: boolean }> {
  const maxItems = options.maxItems ?? 1000;
  const items: z.output<S>[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await request('GET', path, AdminApi.Page(item), { query: { ...options.query, limit: 200, cursor }, signal: options.signal });
    items.push(...page.items);
    if (!page.nextCursor) return { items, more: false };
    if (items.length >= maxItems) return { items: items.slice(0, maxItems), more: true };
    cursor = page.nextCursor;
  }
}
