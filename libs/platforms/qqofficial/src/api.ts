import { z } from 'zod';
import { appKey, type SharedAccessTokens } from '@conveyor/platform-kit';
import type { QqOfficialConfig } from './config.js';
import type { QqTarget } from './parse.js';

const REQUEST_TIMEOUT_MS = 15_000;
const ERROR_BODY_CHARS = 300;
/** QQ's answer to a reply whose `msg_id` and `msg_seq` were sent before: it was shown already. */
export const QQ_DEDUPLICATED = 40054005;

/** QQ refused a call; `status` and QQ's `code` classify it. */
export class QqApiError extends Error {
  readonly code = 'QQ_API_ERROR';

  constructor(readonly status: number, readonly qqCode: number | undefined, message: string) {
    super(message);
    this.name = 'QqApiError';
  }

  /** A refusal that sending again will not change (bad request, no permission, the passive reply window over). */
  get permanent(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 429 && this.status !== 408 && this.status !== 401;
  }
}

const TokenAnswer = z.looseObject({ access_token: z.string().min(1).max(4_096), expires_in: z.union([z.number(), z.string().regex(/^\d{1,10}$/)]).transform(Number) });
const ErrorBody = z.looseObject({ code: z.number().int().optional(), message: z.string().max(10_000).optional() });
const Gateway = z.looseObject({ url: z.string().max(4_096).regex(/^wss?:\/\//, 'url: a ws(s) URL') });
const Sent = z.looseObject({ id: z.string().max(256).optional() });

export interface QqApiOptions {
  config: QqOfficialConfig;
  /** The access tokens shared across replicas; without it every call fetches its own. */
  tokens?: SharedAccessTokens;
  fetchImpl?: typeof fetch;
  signal?: AbortSignal;
}

/**
 * The QQ Official Bot API calls Conveyor makes: the app access token (from `auth_url`, kept in Redis
 * for every replica), the WebSocket URL, and passive replies. A 401 drops the kept token and tries once
 * more with a fresh one.
 */
export class QqApi {
  constructor(private readonly o: QqApiOptions) {}

  private get app(): string {
    return appKey(this.o.config.appid, this.o.config.secret);
  }

  accessToken(): Promise<string> {
    const fetchToken = () => this.fetchToken();
    return this.o.tokens ? this.o.tokens.get(this.app, fetchToken, this.o.signal) : fetchToken().then((t) => t.token);
  }

  private async fetchToken(): Promise<{ token: string; expiresInS: number }> {
    const res = await this.fetch(this.o.config.auth_url, { method: 'POST', body: JSON.stringify({ appId: this.o.config.appid, clientSecret: this.o.config.secret }) });
    const text = await res.text();
    const parsed = TokenAnswer.safeParse(safeJson(text));
    if (!res.ok || !parsed.success) {
      const err = ErrorBody.safeParse(safeJson(text));
      throw new QqApiError(res.status, err.success ? err.data.code : undefined, `QQ access token refused (${res.status}): ${err.success && err.data.message ? err.data.message : text.slice(0, ERROR_BODY_CHARS)}`);
    }
    return { token: parsed.data.access_token, expiresInS: parsed.data.expires_in };
  }

  /** One API call with `Authorization: QQBot <access token>`; a 401 drops the shared token and tries once more with a fresh one. */
  call<T>(method: 'GET' | 'POST', path: string, schema: z.ZodType<T>, body?: object, onWritten?: () => void): Promise<T> {
    let written = false;
    const once = (token: string) => this.callWith(token, method, path, schema, body, written ? undefined : () => {
      written = true;
      onWritten?.();
    });
    if (!this.o.tokens) return this.fetchToken().then((t) => once(t.token));
    return this.o.tokens.withToken(this.app, () => this.fetchToken(), once, (err) => err instanceof QqApiError && err.status === 401, this.o.signal);
  }

  private async callWith<T>(token: string, method: 'GET' | 'POST', path: string, schema: z.ZodType<T>, body?: object, onWritten?: () => void): Promise<T> {
    const pending = this.fetch(`${this.o.config.api_base_url}${path}`, {
      method,
      headers: { authorization: `QQBot ${token}`, 'x-union-appid': this.o.config.appid },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    onWritten?.();
    const res = await pending;
    const text = await res.text();
    const route = path.replace(/\/[^/]{16,}(?=\/|$)/g, '/:id');
    if (!res.ok) {
      const err = ErrorBody.safeParse(safeJson(text));
      throw new QqApiError(res.status, err.success ? err.data.code : undefined, `QQ ${method} ${route} failed with ${res.status}: ${err.success && err.data.message ? err.data.message : text.slice(0, ERROR_BODY_CHARS)}`);
    }
    const parsed = schema.safeParse(text ? safeJson(text) : {});
    if (!parsed.success) throw new QqApiError(res.status, undefined, `QQ ${method} ${route} answered an unexpected body`);
    return parsed.data;
  }

  gatewayUrl(): Promise<string> {
    return this.call('GET', '/gateway', Gateway).then((g) => g.url);
  }

  /** A passive text reply to message `msgId` (`msg_seq` tells QQ's replies to one message apart). */
  reply(target: QqTarget, content: string, msgId: string, msgSeq: number, onWritten?: () => void): Promise<string | undefined> {
    const id = encodeURIComponent(target.id);
    const path = { group: `/v2/groups/${id}/messages`, c2c: `/v2/users/${id}/messages`, channel: `/channels/${id}/messages`, dm: `/dms/${id}/messages` }[target.kind];
    const body = target.kind === 'group' || target.kind === 'c2c'
      ? { content, msg_type: 0, ...(msgId ? { msg_id: msgId, msg_seq: msgSeq } : {}) }
      : { content, ...(msgId ? { msg_id: msgId } : {}) };
    return this.call('POST', path, Sent, body, onWritten).then((m) => m.id);
  }

  private fetch(url: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<Response> {
    const signals = [AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(this.o.signal ? [this.o.signal] : [])];
    return (this.o.fetchImpl ?? fetch)(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers }, signal: AbortSignal.any(signals) });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
