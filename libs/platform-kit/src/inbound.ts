import type { LauncherType, MessageChain } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';
import type { ReplyHold } from './held-call.js';
import type { PlatformLogger } from './outbound.js';

/** Request headers as Node gives them (lower-case names). */
export type WebhookHeaders = Record<string, string | readonly string[] | undefined>;

/** One webhook call to `/bots/{bot_id}[/{subPath}]` (or a platform's legacy path), body unparsed. */
export interface WebhookRequest {
  /**
   * The HTTP method, upper-case. Most platforms only POST; some check the URL with a GET first
   * (WeCom's `echostr`), and a platform answers methods it does not expect itself.
   */
  method: string;
  /** The URL's query parameters (the first of a repeated one); some platforms sign with them. */
  query: Readonly<Record<string, string>>;
  /** The bot the URL names (a normalised UUID); a platform uses it e.g. as the bot's account id. */
  botId: string;
  /** What follows the bot id in the path, without the leading slash; '' for the bare path. */
  subPath: string;
  headers: WebhookHeaders;
  /** The exact bytes received (signatures are computed over them). */
  rawBody: Buffer;
  now: Date;
}

/** An HTTP answer a platform chose: status, JSON or text body, extra headers. */
export interface HttpAnswer {
  status: number;
  body: unknown;
  /** `json` (default) sends `body` as JSON; `text` sends it as text/plain (e.g. a challenge echo). */
  type?: 'json' | 'text';
  headers?: Record<string, string>;
}

/** One message that becomes a query, in LangBot's terms. */
export interface InboundQuery {
  /** The platform's conversation id: where the reply goes (Telegram chat id, Slack channel). */
  sessionId: string;
  launcherType: LauncherType;
  senderId: string;
  senderName: string;
  groupName?: string;
  messageChain: MessageChain;
  /** The platform's id of the message the reply answers (becomes `ReplyRoute.replyTo`). */
  replyTo: string;
  /**
   * The platform's own id of this delivery (Telegram update_id, Slack event_id), unique per bot. The
   * ingress publishes with it as the JetStream message id, so a platform's retry is dropped as a
   * duplicate on any replica.
   */
  dedupId: string;
  /** Whether replies stream to this chat (the bot's `enable-stream-reply`); absent means the adapter's default. */
  stream?: boolean;
}

/** Who sent a message and what it says, as every platform's parser reads it. */
export type InboundMessage = Pick<InboundQuery, 'sessionId' | 'launcherType' | 'senderId' | 'senderName' | 'groupName' | 'messageChain'>;

/** The query a parsed message becomes, given what the reply answers and the delivery's dedup id. */
export function inboundQuery(m: InboundMessage, delivery: { replyTo: string; dedupId: string; stream?: boolean }): InboundQuery {
  return {
    sessionId: m.sessionId,
    launcherType: m.launcherType,
    senderId: m.senderId,
    senderName: m.senderName,
    ...(m.groupName !== undefined ? { groupName: m.groupName } : {}),
    messageChain: m.messageChain,
    replyTo: delivery.replyTo,
    dedupId: delivery.dedupId,
    ...(delivery.stream !== undefined ? { stream: delivery.stream } : {}),
  };
}

/**
 * What a webhook call comes to. `answer`: reply at once and publish nothing (a challenge, a bad
 * signature, an event that is no message). `publish`: publish the queries, then answer by outcome.
 * `drop`: answer as the platform wants an ignored delivery answered (usually 2xx so it does not
 * retry for ever), with the reason logged. A `publish` with `hold` keeps the call open for the
 * reply (see `ReplyHold`) instead of answering `accepted`. `pull`: fetch the messages the callback
 * announces, then answer (see `InboundPullContext`).
 */
export type WebhookOutcome =
  | { kind: 'answer'; answer: HttpAnswer }
  | {
      kind: 'publish';
      queries: InboundQuery[];
      ref?: LogRef;
      once?: OnceCredential;
      hold?: ReplyHold;
      /** This delivery's own answer once published, instead of `answers.accepted` (WeCom AI bot: the start of the reply's stream). */
      accepted?: HttpAnswer;
    }
  | { kind: 'drop'; reason: string; ref?: LogRef; once?: OnceCredential }
  | { kind: 'pull'; ref?: LogRef; pull(ctx: InboundPullContext): Promise<HttpAnswer | void> };

/**
 * What a `pull` outcome's function gets from the ingress: for platforms whose callback only says
 * that messages wait (WeCom customer service's `kf_msg_or_event`), the function fetches them from
 * the platform and publishes each; or for a callback that asks for state the dispatcher keeps (WeCom
 * AI bot's stream refresh), the function reads it. The callback is answered with what it resolved
 * with, else `accepted`; by outcome (`failed`, `overloaded`) when it threw.
 */
export interface InboundPullContext {
  redis: RedisClient;
  /** The deployment's Redis key prefix. */
  prefix: string;
  /**
   * Publishes one message as a query, de-duplicated by its `dedupId`; resolves once it is on the
   * bus. A message that can never fit the bus is dropped (logged) instead of rejected, so it does
   * not hold up the ones after it.
   */
  publish(query: InboundQuery): Promise<void>;
  logger: PlatformLogger;
  /** Tests may route the platform's HTTP calls elsewhere; production uses the global fetch. */
  fetchImpl?: typeof fetch;
}

/**
 * A verified credential of the request that must not be accepted again while it is valid: a
 * platform whose signature does not cover the body (DingTalk signs only a timestamp) names it, so a
 * captured header pair cannot carry another body. The ingress claims it across replicas before
 * publishing (the second request with it gets `replayed`), and gives it back when publishing
 * fails, so the platform's own retry of that delivery is taken.
 */
export interface OnceCredential {
  /** Unique among the bot's requests while valid (e.g. `<timestamp>:<sign>`). */
  id: string;
  /** How long the credential stays acceptable from now; the claim is held that long. */
  ttlMs: number;
  /** The answer for a request that presents it again. */
  replayed: HttpAnswer;
}

/** The platform's ids of a delivery for log lines (e.g. `{ updateId }`); never a secret or message text. */
export type LogRef = Record<string, string | number>;

/**
 * A platform's webhook side: pure functions from the request to an outcome, so it is unit-testable
 * without a server. The ingress owns the transport (body bound, bot lookup, publishing, metrics).
 */
export interface PlatformInbound<C> {
  /** Largest body read; a larger one is answered `tooLarge`. Default LIMITS.inboundBodyBytes. */
  bodyLimitBytes?: number;
  /** Verify the request (signature, timestamp window) and parse it. Must not throw on bad input. */
  handle(req: WebhookRequest, config: C): WebhookOutcome;
  /** The platform's answers for the ingress' own outcomes. */
  answers: {
    /** No such bot, or the bot is of another platform. */
    notFound: HttpAnswer;
    disabled: HttpAnswer;
    /** The bot's stored config does not parse (logged; the caller cannot fix it). */
    misconfigured: HttpAnswer;
    /** The body is over `bodyLimitBytes`. */
    tooLarge: HttpAnswer;
    /** A `drop` outcome, and a query that can never fit the bus. */
    dropped: HttpAnswer;
    /** Every query published (or already published: a duplicate). */
    accepted: HttpAnswer;
    /** Too many messages in flight or Redis down: the platform should retry later. */
    overloaded: HttpAnswer;
    /** Anything else went wrong on our side. */
    failed: HttpAnswer;
  };
}

/**
 * The usual answers for the ingress' own outcomes: `ok` for a message taken or dropped, and for the
 * rest the platform's error shape (`error`) around the status and a short reason. A non-2xx answer
 * makes the platforms that retry send the message again.
 */
export function webhookAnswers(ok: HttpAnswer, error: (status: number, message: string) => HttpAnswer): PlatformInbound<unknown>['answers'] {
  return {
    notFound: error(404, 'bot not found'),
    disabled: error(403, 'bot is disabled'),
    misconfigured: error(500, 'bot misconfigured'),
    tooLarge: { ...error(413, 'body too large'), headers: { Connection: 'close' } },
    dropped: ok,
    accepted: ok,
    overloaded: error(503, 'overloaded'),
    failed: error(500, 'internal error'),
  };
}

/** A URL's query parameters, the first value of each, as `WebhookRequest.query` carries them. */
export function queryOf(url: string): Record<string, string> {
  const q = url.indexOf('?');
  const query: Record<string, string> = {};
  if (q < 0) return query;
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) if (!Object.hasOwn(query, k)) query[k] = v;
  return query;
}

/** A header's value (the first, if repeated), or undefined. */
export function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return typeof v === 'string' ? v : v?.[0];
}
