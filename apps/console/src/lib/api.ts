// The admin API client: every request goes to ADMIN_API_BASE on the console's own origin, with the
// session cookie the browser keeps (HTTP-only, so the page never sees it). Answers are checked with the
// shared zod schemas, so a console and a service that disagree fail with a clear message, not a blank page.
import { AdminApi } from '@conveyor/contracts';
import type { z } from 'zod';
import type { Translator } from '../i18n/i18n.js';

export type ErrorCode = AdminApi.AdminError['code'] | 'network' | 'bad_response';

/** Where a console-made error came from, so its message can be told in the reader's language. */
export interface ErrorContext {
  method: string;
  path: string;
  /** What went wrong underneath (the network error, the first schema issue). */
  detail?: string;
}

/** A failed call: the API's classified error, or the console's own (`network`, `bad_response`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    readonly issues: AdminApi.AdminIssue[] = [],
    readonly currentVersion?: number,
    readonly retryAfterSeconds?: number,
    readonly context?: ErrorContext,
  ) {
    super(message);
  }
}

/**
 * What the user should read for a failed call. The console's own errors and a stale write are told in
 * the reader's language; an error the API classified gets the code's meaning in that language, then
 * the API's own message as it was sent (the API speaks English).
 */
export function describeError(err: unknown, { t }: Pick<Translator, 't'>): string {
  if (err instanceof ApiError) {
    const ctx = err.context ?? { method: '', path: '' };
    if (err.code === 'version_conflict') return t('errors.versionConflict');
    if (err.code === 'network') return t('errors.network', { detail: ctx.detail ?? err.message });
    if (err.code === 'bad_response') return t('errors.badResponse', { method: ctx.method, path: ctx.path, detail: ctx.detail ?? err.message });
    const wait = err.retryAfterSeconds !== undefined ? t('errors.retryAfter', { seconds: err.retryAfterSeconds }) : '';
    // A failure the API did not classify carries where it happened and nothing more.
    if (err.context && err.context.detail === undefined) return `${t('errors.http', { status: err.status, method: ctx.method, path: ctx.path })}${wait}`;
    const where = err.field ? ` (${err.field})` : '';
    const issues = err.issues.length > 1 ? `: ${err.issues.map((i) => `${i.path || t('errors.root')}: ${i.message}`).join('; ')}` : '';
    return `${t('errors.api', { summary: t(`errors.code.${err.code}`), message: err.message })}${where}${issues}${wait}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export interface RequestOptions {
  body?: unknown;
  /** A multipart body (a file upload), sent as it is; the browser sets its content type. */
  form?: FormData;
  /** A file as the body itself (a skill's zip), with its content type. */
  file?: { body: Blob; type: string };
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
  if (options.file) headers['content-type'] = options.file.type;
  if (options.version !== undefined) headers['if-match'] = String(options.version);
  let res: Response;
  try {
    res = await fetch(apiUrl(path, options.query), {
      method,
      headers,
      credentials: 'same-origin',
      body: options.form ?? options.file?.body ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: options.signal,
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new ApiError(0, 'network', `The admin service could not be reached (${detail}).`, undefined, [], undefined, undefined, { method, path, detail });
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
      throw new ApiError(res.status, e.code, e.message, e.field, e.issues ?? [], e.currentVersion, e.retryAfterSeconds);
    }
    throw new ApiError(res.status, res.status === 401 ? 'unauthenticated' : 'internal', `HTTP ${res.status} from ${method} ${path}`, undefined, [], undefined, undefined, { method, path });
  }
  if (schema === null) return undefined;
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const detail = first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'invalid';
    throw new ApiError(res.status, 'bad_response', `Unexpected answer from ${method} ${path}: ${detail}`, undefined, [], undefined, undefined, { method, path, detail });
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
