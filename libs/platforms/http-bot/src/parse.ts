import { LIMITS, storableChain, storableText, type LauncherType, type MessageComponent } from '@conveyor/contracts';
import type { InboundMessage as PlatformInboundMessage } from '@conveyor/platform-kit';
import type { AdapterConfig } from './adapter-config.js';
import { ChainParseError, parseMessageChain } from './components.js';
import { HttpBotError } from './errors.js';
import { PythonRecursionError, pyStr, pyTruthy, pyTypeName } from './python.js';
import { HEADER_IDEMPOTENCY, HEADER_SIGNATURE, HEADER_TIMESTAMP, verifyInbound } from './verify.js';

export { acceptedBody, newAcceptedMessageId, resetOkBody, syncOkBody } from './responses.js';
export { normalizeBotId } from './bot-id.js';

export type InboundKind = 'push' | 'sync' | 'reset';

/** Node's IncomingHttpHeaders, a fetch `Headers`, or any name → value map (names case-insensitive). */
export type HeaderSource =
  | { get(name: string): string | null }
  | Record<string, string | readonly string[] | undefined>;

export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    return typeof value === 'string' ? value : value[0];
  }
  return undefined;
}

export interface InboundRequestInput {
  /** What follows `/bots/{bot_uuid}`: "" (push), "sync" or "reset". */
  subPath: string | undefined;
  rawBody: Uint8Array;
  headers: HeaderSource;
  adapterConfig: AdapterConfig;
  now: Date;
}

/**
 * The message as LangBot builds its event from it: the session id is Python's `str(session_id)`; a
 * group's sender is `sender.id` (else the session id), a person's the session id (`sender.id` is
 * ignored); the group name is `sender.group_name` or the session id; the chain holds the caller's
 * components without the server's own `Source`.
 */
export interface InboundMessage extends PlatformInboundMessage {
  /** Always the session id (person id or group id). */
  launcherId: string;
}

export type Failure = { ok: false; error: HttpBotError };

export type PreflightResult =
  | { ok: true; kind: 'push' | 'sync'; body: Record<string, unknown>; idempotencyKey: string | null }
  | { ok: true; kind: 'reset'; sessionId: string; launcherType: LauncherType }
  | Failure;

export type InboundRequestResult =
  | { ok: true; kind: 'push' | 'sync'; message: InboundMessage; idempotencyKey: string | null }
  | { ok: true; kind: 'reset'; sessionId: string; launcherType: LauncherType }
  | Failure;

const fail = (error: HttpBotError): Failure => ({ ok: false, error });

type TextField = { ok: true; value: string } | Failure;

/**
 * A body field as LangBot reads it (Python `str(value)`), made storable (see storableText) and held to
 * `maxChars`: ids and names end up in Redis keys, Postgres rows and bus messages, which all have bounds.
 */
function textField(name: string, value: unknown, maxChars: number): TextField {
  let text: string;
  try {
    text = storableText(pyStr(value));
  } catch (err) {
    if (err instanceof PythonRecursionError) return fail(HttpBotError.invalidField(`${name}: ${err.message}`));
    throw err;
  }
  if (text.length > maxChars) return fail(HttpBotError.invalidField(`${name} is longer than ${maxChars} characters`));
  return { ok: true, value: text };
}

function kindOf(subPath: string | undefined): InboundKind | null {
  if (subPath === '' || subPath === undefined) return 'push';
  if (subPath === 'sync' || subPath === 'reset') return subPath;
  return null;
}

/** `session_type`, with LangBot's `body.get('session_type') or default` then `== 'group'`. */
function launcherTypeOf(sessionType: unknown, config: AdapterConfig): LauncherType {
  const effective = pyTruthy(sessionType) ? sessionType : config.default_session_type;
  return effective === 'group' ? 'group' : 'person';
}

/**
 * Every check up to (not including) idempotency, in LangBot's order: sub-path, size,
 * signature, JSON, object, required keys (then Conveyor's bound on the idempotency key's length, and
 * for a reset on the session id). Idempotency comes next and consumes the key before the
 * message is parsed, so a service doing dedup calls this, then its key store, then
 * `parseInboundMessage`.
 */
export function preflightInbound(input: InboundRequestInput): PreflightResult {
  const kind = kindOf(input.subPath);
  if (kind === null) return fail(HttpBotError.unknownSubPath(input.subPath ?? ''));
  if (input.rawBody.length > LIMITS.inboundBodyBytes) return fail(HttpBotError.messageTooLarge());

  const config = input.adapterConfig;
  if (config.signature_required) {
    const verdict = verifyInbound({
      secret: config.inbound_secret,
      timestampHeader: headerValue(input.headers, HEADER_TIMESTAMP),
      signatureHeader: headerValue(input.headers, HEADER_SIGNATURE),
      rawBody: input.rawBody,
      nowSeconds: input.now.getTime() / 1000,
    });
    if (!verdict.ok) return fail(HttpBotError.invalidSignature(verdict.reason));
  }

  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(input.rawBody));
  } catch {
    return fail(HttpBotError.invalidJson());
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail(HttpBotError.notObject());
  const obj = body as Record<string, unknown>;

  if (kind === 'reset') {
    if (!Object.hasOwn(obj, 'session_id')) return fail(HttpBotError.sessionIdRequired());
    // Normalised like a pushed message's, so the reset finds the session that message went to.
    const sessionId = textField('session_id', obj.session_id, LIMITS.idChars);
    if (!sessionId.ok) return sessionId;
    return { ok: true, kind, sessionId: sessionId.value, launcherType: launcherTypeOf(obj.session_type, config) };
  }
  if (!Object.hasOwn(obj, 'session_id') || !Object.hasOwn(obj, 'message')) return fail(HttpBotError.missingFields());
  const idempotencyKey = headerValue(input.headers, HEADER_IDEMPOTENCY) || null;
  if (idempotencyKey && idempotencyKey.length > LIMITS.idempotencyKeyChars) {
    return fail(HttpBotError.invalidField(`idempotency key is longer than ${LIMITS.idempotencyKeyChars} characters`));
  }
  return { ok: true, kind, body: obj, idempotencyKey };
}

/**
 * Builds the normalized message from a preflighted body; failures are 400 "failed to parse
 * message", or 400 naming the field for an id or name past its bound. Every text is made storable.
 */
export function parseInboundMessage(
  body: Record<string, unknown>,
  adapterConfig: AdapterConfig,
): { ok: true; message: InboundMessage } | Failure {
  try {
    const session = textField('session_id', body.session_id, LIMITS.idChars);
    if (!session.ok) return session;
    const sessionId = session.value;
    const launcherType = launcherTypeOf(body.session_type, adapterConfig);
    const rawSender = pyTruthy(body.sender) ? body.sender : {};
    if (typeof rawSender !== 'object' || rawSender === null || Array.isArray(rawSender)) {
      // LangBot calls `.get` on it; this is the AttributeError text the caller sees.
      return fail(HttpBotError.parseFailed(`'${pyTypeName(rawSender)}' object has no attribute 'get'`));
    }
    const sender = rawSender as Record<string, unknown>;
    const field = (key: string, maxChars: number, dflt: string): TextField =>
      Object.hasOwn(sender, key) ? textField(`sender.${key}`, sender[key], maxChars) : { ok: true, value: dflt };
    const senderName = field('name', LIMITS.nameChars, 'User');
    if (!senderName.ok) return senderName;
    const messageChain = storableChain(parseMessageChain(body.message));
    if (launcherType === 'group') {
      const senderId = field('id', LIMITS.idChars, sessionId);
      if (!senderId.ok) return senderId;
      const groupName = field('group_name', LIMITS.nameChars, sessionId);
      if (!groupName.ok) return groupName;
      return {
        ok: true,
        message: {
          sessionId,
          launcherType,
          launcherId: sessionId,
          senderId: senderId.value,
          senderName: senderName.value,
          groupName: groupName.value,
          messageChain,
        },
      };
    }
    return {
      ok: true,
      message: { sessionId, launcherType, launcherId: sessionId, senderId: sessionId, senderName: senderName.value, messageChain },
    };
  } catch (err) {
    if (err instanceof ChainParseError) return fail(HttpBotError.parseFailed(err.message));
    return fail(HttpBotError.parseFailed(err instanceof Error ? err.message : String(err)));
  }
}

/** Preflight plus message parsing, for callers that do not deduplicate on the idempotency key. */
export function parseInboundRequest(input: InboundRequestInput): InboundRequestResult {
  const pre = preflightInbound(input);
  if (!pre.ok || pre.kind === 'reset') return pre;
  const parsed = parseInboundMessage(pre.body, input.adapterConfig);
  if (!parsed.ok) return parsed;
  return { ok: true, kind: pre.kind, message: parsed.message, idempotencyKey: pre.idempotencyKey };
}
