import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { robotCodeOf, type DingtalkConfig } from './config.js';

/** One HTTP call to DingTalk, at most; a hung call must fail the part, not hold it. */
const CALL_TIMEOUT_MS = 10_000;
/** Attempts of one call while it fails for a passing reason (network, 5xx, 429). */
const MAX_ATTEMPTS = 3;
/** The access token is renewed this long before DingTalk's `expireIn` says it ends. */
const TOKEN_MARGIN_MS = 5 * 60_000;
/** Access tokens of this many apps are kept per process; the oldest goes first. */
const MAX_CACHED_TOKENS = 1_000;
/** Characters of an error answer kept in a message (a proxy's HTML page must not flood the logs). */
const ERROR_BODY_CHARS = 300;
/** OpenAPI error codes that mean the access token is no longer accepted: fetch a new one and call again. */
const TOKEN_REFUSED_CODES: ReadonlySet<string> = new Set(['InvalidAuthentication', 'Forbidden.AccessDenied.AccessTokenPermissionDenied', 'InvalidAccessToken']);

/**
 * A DingTalk call that failed. `dingtalkCode` is DingTalk's own error code (the OpenAPI's `code`, or a
 * session webhook's `errcode`); `retryable` whether the same call may pass later.
 */
export class DingtalkApiError extends Error {
  readonly code = 'DINGTALK_API_ERROR';

  constructor(message: string, readonly status: number | undefined, readonly dingtalkCode: string | undefined, readonly retryable: boolean) {
    super(message);
    this.name = 'DingtalkApiError';
  }
}

const TokenAnswer = z.looseObject({ accessToken: z.string().min(1).max(2_000), expireIn: z.number().int().positive().optional() });
const OpenApiError = z.looseObject({ code: z.string().max(200).optional(), message: z.string().max(10_000).optional() });
const WebhookAnswer = z.looseObject({ errcode: z.number().int().default(0), errmsg: z.string().max(10_000).default('') });
const Anything = z.unknown();
const DownloadAnswer = z.looseObject({ downloadUrl: z.string().regex(/^https?:\/\/\S+$/).max(4_000) });

/** A reply as DingTalk's robot messages carry it: markdown (with a title for the notification) or text, and who it mentions. */
export interface RobotReply {
  markdown: boolean;
  text: string;
  atUserIds: string[];
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** The notification title of a markdown reply: its first line, short. */
export const markdownTitle = (text: string): string => (text.split('\n').find((l) => l.trim()) ?? 'reply').replace(/[#*>`]/g, '').trim().slice(0, 64) || 'reply';

/**
 * The DingTalk HTTP calls Conveyor makes: the robot OpenAPI (`x-acs-dingtalk-access-token`, the
 * token from `/v1.0/oauth2/accessToken` cached per app until shortly before it expires and fetched
 * again when DingTalk refuses it), session webhooks, AI card creation and streaming updates. Errors
 * name the API path, never a token or a webhook's session.
 */
export class DingtalkApi {
  /** Insertion-ordered, so the first key is the oldest when the cache is full. */
  private readonly tokens = new Map<string, CachedToken>();
  private readonly pending = new Map<string, Promise<string>>();

  constructor(
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  /** A reply through the conversation's session webhook (valid for a while after the message). */
  async sendBySession(webhookUrl: string, reply: RobotReply, signal?: AbortSignal): Promise<void> {
    const at = { atUserIds: reply.atUserIds, isAtAll: false };
    const body = reply.markdown
      ? { msgtype: 'markdown', markdown: { title: markdownTitle(reply.text), text: reply.text }, at }
      : { msgtype: 'text', text: { content: reply.text }, at };
    const answer = await this.call(webhookUrl, 'session webhook', { method: 'POST', body }, WebhookAnswer, signal);
    if (answer.errcode !== 0) throw new DingtalkApiError(`session webhook: errcode ${answer.errcode} ${answer.errmsg.slice(0, 200)}`, 200, String(answer.errcode), answer.errcode === -1);
  }

  /** A reply through the robot OpenAPI: to one person (`oToMessages/batchSend`) or into a group (`groupMessages/send`). */
  async sendByRobot(config: DingtalkConfig, target: { group: boolean; id: string }, reply: RobotReply, signal?: AbortSignal): Promise<void> {
    const msg = reply.markdown
      ? { msgKey: 'sampleMarkdown', msgParam: JSON.stringify({ title: markdownTitle(reply.text), text: reply.text }) }
      : { msgKey: 'sampleText', msgParam: JSON.stringify({ content: reply.text }) };
    const robotCode = robotCodeOf(config);
    if (target.group) await this.openApi(config, 'POST', '/v1.0/robot/groupMessages/send', { robotCode, openConversationId: target.id, ...msg }, signal);
    else await this.openApi(config, 'POST', '/v1.0/robot/oToMessages/batchSend', { robotCode, userIds: [target.id], ...msg }, signal);
  }

  /** Creates an AI card from the template and delivers it into the conversation (`/v1.0/card/instances/createAndDeliver`). */
  async createCard(config: DingtalkConfig, outTrackId: string, target: { group: boolean; id: string }, signal?: AbortSignal): Promise<void> {
    const robotCode = robotCodeOf(config);
    await this.openApi(config, 'POST', '/v1.0/card/instances/createAndDeliver', {
      cardTemplateId: config.card_template_id,
      outTrackId,
      cardData: { cardParamMap: { content: '' }, config: JSON.stringify({ autoLayout: config.card_auto_layout }) },
      callbackType: 'STREAM',
      openSpaceId: target.group ? `dtv1.card//IM_GROUP.${target.id}` : `dtv1.card//IM_ROBOT.${target.id}`,
      imGroupOpenSpaceModel: { supportForward: true },
      imRobotOpenSpaceModel: { supportForward: true },
      ...(target.group ? { imGroupOpenDeliverModel: { robotCode } } : { imRobotOpenDeliverModel: { spaceType: 'IM_ROBOT', robotCode } }),
    }, signal);
  }

  /** Replaces the card's `content` with the text so far (`PUT /v1.0/card/streaming`); the last update finalizes it. */
  async streamCard(config: DingtalkConfig, outTrackId: string, update: { guid: string; content: string; finalize: boolean }, signal?: AbortSignal): Promise<void> {
    await this.openApi(config, 'PUT', '/v1.0/card/streaming', {
      outTrackId,
      guid: update.guid,
      key: 'content',
      content: update.content,
      isFull: true,
      isFinalize: update.finalize,
      isError: false,
    }, signal);
  }

  /** The download URL of a file a robot message names by its download code (`/v1.0/robot/messageFiles/download`). */
  async downloadUrl(config: DingtalkConfig, downloadCode: string, signal?: AbortSignal): Promise<string> {
    const answer = DownloadAnswer.safeParse(await this.openApi(config, 'POST', '/v1.0/robot/messageFiles/download', { downloadCode, robotCode: robotCodeOf(config) }, signal));
    if (!answer.success) throw new DingtalkApiError('/v1.0/robot/messageFiles/download: no downloadUrl in the answer', 200, undefined, false);
    return answer.data.downloadUrl;
  }

  /** An OpenAPI call with the app's access token, once more with a fresh token if DingTalk refused the cached one. */
  private async openApi(config: DingtalkConfig, method: 'POST' | 'PUT', path: string, body: object, signal?: AbortSignal): Promise<unknown> {
    for (let fresh = false; ; fresh = true) {
      const token = await this.accessToken(config, signal);
      try {
        return await this.call(`${config.api_base_url}${path}`, path, { method, body, token }, Anything, signal);
      } catch (err) {
        const refused = err instanceof DingtalkApiError && (err.status === 401 || (err.dingtalkCode !== undefined && TOKEN_REFUSED_CODES.has(err.dingtalkCode)));
        if (fresh || !refused) throw err;
        this.tokens.delete(tokenKey(config));
      }
    }
  }

  private async accessToken(config: DingtalkConfig, signal?: AbortSignal): Promise<string> {
    const key = tokenKey(config);
    const cached = this.tokens.get(key);
    if (cached && cached.expiresAt > this.now()) return cached.token;
    // Parts of many replies may ask at once: one token request for them all.
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const fetching = this.fetchToken(config, key, signal).finally(() => this.pending.delete(key));
    this.pending.set(key, fetching);
    return fetching;
  }

  private async fetchToken(config: DingtalkConfig, key: string, signal?: AbortSignal): Promise<string> {
    const path = '/v1.0/oauth2/accessToken';
    const answer = await this.call(`${config.api_base_url}${path}`, path, { method: 'POST', body: { appKey: config.client_id, appSecret: config.client_secret } }, TokenAnswer, signal);
    const lifetimeMs = (answer.expireIn ?? 7200) * 1000;
    this.tokens.delete(key);
    if (this.tokens.size >= MAX_CACHED_TOKENS) {
      const oldest = this.tokens.keys().next();
      if (!oldest.done) this.tokens.delete(oldest.value);
    }
    this.tokens.set(key, { token: answer.accessToken, expiresAt: this.now() + Math.max(lifetimeMs - TOKEN_MARGIN_MS, lifetimeMs / 2) });
    return answer.accessToken;
  }

  /** One call, retried (bounded, with backoff) while it may pass later. */
  private async call<T>(url: string, what: string, init: { method: string; body: object; token?: string }, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.callOnce(url, what, init, schema, signal);
      } catch (err) {
        const retryable = !(err instanceof DingtalkApiError) || err.retryable;
        if (!retryable || attempt >= MAX_ATTEMPTS || signal?.aborted) throw err;
        await delay(500 * 2 ** (attempt - 1), undefined, signal ? { signal } : undefined);
      }
    }
  }

  private async callOnce<T>(url: string, what: string, init: { method: string; body: object; token?: string }, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T> {
    const timeout = AbortSignal.timeout(CALL_TIMEOUT_MS);
    let res: Response;
    try {
      res = await this.fetchImpl(url, {
        method: init.method,
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(init.token ? { 'x-acs-dingtalk-access-token': init.token } : {}) },
        body: JSON.stringify(init.body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new DingtalkApiError(`${what}: ${err instanceof Error ? err.name : 'network error'}`, undefined, undefined, true);
    }
    const text = await res.text();
    const json = safeJson(text);
    if (!res.ok) {
      const e = OpenApiError.safeParse(json);
      const code = e.success ? e.data.code : undefined;
      const detail = e.success && e.data.message ? e.data.message.slice(0, ERROR_BODY_CHARS) : text.slice(0, ERROR_BODY_CHARS);
      throw new DingtalkApiError(`${what}: HTTP ${res.status}${code ? ` ${code}` : ''}: ${detail}`, res.status, code, res.status === 429 || res.status >= 500);
    }
    const parsed = schema.safeParse(json ?? {});
    if (!parsed.success) throw new DingtalkApiError(`${what}: unexpected answer`, res.status, undefined, false);
    return parsed.data;
  }
}

/** The token cache's key: the app's credentials and API base, hashed so the secret is not kept as a key. */
function tokenKey(config: DingtalkConfig): string {
  return createHash('sha256').update(`${config.api_base_url}\u0000${config.client_id}\u0000${config.client_secret}`).digest('hex');
}
