import fc from 'fast-check';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { connect } from '@nats-io/transport-node';
import { DebugChat, redisKeys, storableText } from '@conveyor/contracts';
import { normalizeBotId } from '@conveyor/http-bot';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { anyTypedValue, brokenJson, deepPlaceholder, expandDeep, headerText, hostileText, smallJson } from './arbitraries.js';
import { emptyReport, forEachLimit, preview, requestFailure, type CategoryReport } from './report.js';
import { FAILURE_HINT, shortEcho } from './runs.js';
import { NATS_URL, REDIS_URL } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

/** The web chat's own bounds (services/ingress/src/webchat.controller.ts). */
const MAX_TEXT = 10_000;
const MAX_BODY_BYTES = 64 * 1024;

type Route = 'messages' | 'reset' | 'events' | 'bots' | 'other';
type Auth = 'valid' | 'lowercase' | 'padded' | 'missing' | 'wrong' | 'basic' | 'twice' | 'short' | 'tab' | 'long';
/** The fuzz system's bots under their own id or another spelling Python's UUID() takes, an unknown bot, or any text. */
type BotRef = 'own' | 'telegram' | 'upper' | 'braces' | 'urn' | 'unknown' | { raw: string };
/** A session key of its own, one of a few shared by many inputs, or any text sent as the key. */
type SessionRef = 'fresh' | { shared: number } | { raw: string };

export interface WebChatInput {
  route: Route;
  /** A method the route does not take, instead of its own. */
  method?: string;
  /** For `other`: which unknown path. */
  otherPath?: number;
  bot: BotRef;
  session: SessionRef;
  auth: Auth;
  /** POST body; `"@@DEEP:…@@"` placeholders are expanded. */
  body?: string | Buffer;
  contentType?: string;
  /** An extra header, sometimes long. */
  extraHeader?: string;
}

const AUTH_OK: ReadonlySet<Auth> = new Set(['valid', 'lowercase', 'padded']);
const SHARED_SESSIONS = 4;
const OWN_METHOD: Record<Exclude<Route, 'other'>, string> = { messages: 'POST', reset: 'POST', events: 'GET', bots: 'GET' };

const text: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 16, arbitrary: hostileText(80) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\u0000', '\u0000 \u0000', '\ud800', '\n\t') },
  // Around the 10,000-character bound, and past the 64 KiB body bound.
  { weight: 1, arbitrary: fc.integer({ min: MAX_TEXT - 2, max: MAX_TEXT + 2 }).map((n) => 'w'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_TEXT + 3, max: 100_000 }).map((n) => 'v'.repeat(n)) },
  { weight: 2, arbitrary: anyTypedValue },
  // Message components where the text goes, as the HTTP-bot protocol would send them.
  { weight: 1, arbitrary: fc.array(hostileText(20).map((t) => ({ type: 'Plain', text: t })), { maxLength: 3 }) },
  { weight: 1, arbitrary: deepPlaceholder().map((origin) => [{ type: 'Quote', origin }]) },
);

const body: fc.Arbitrary<string | Buffer> = fc.oneof(
  { weight: 20, arbitrary: text.map((t) => JSON.stringify({ text: t })) },
  { weight: 2, arbitrary: fc.record({ text, message: fc.array(smallJson, { maxLength: 2 }), extra: fc.dictionary(hostileText(8), smallJson, { maxKeys: 3 }) }, { requiredKeys: [] }).map(({ extra, ...fields }) => JSON.stringify({ ...extra, ...fields })) },
  { weight: 1, arbitrary: brokenJson },
  { weight: 1, arbitrary: fc.constantFrom('', 'null', '[]', '"text"', '{"text":"a"}{"text":"b"}', '\ufeff{"text":"bom"}', 'text=hello') },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.constant(Buffer.concat([Buffer.from('{"text":"'), Buffer.from([0xff, 0xfe, 0xc0, 0xed, 0xa0, 0x80]), Buffer.from('"}')])) },
);

const rawSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: hostileText(30) },
  { weight: 2, arbitrary: fc.constantFrom('', '.', '..', '../x', '..%2f', '%2e%2e', 'a/b', ' ', 'a b', '%00', 'x\u0000', 'séance', '😀', '\ud800', 'con', 'a?b=c', 'a#b', '\\', '*') },
  { weight: 1, arbitrary: fc.integer({ min: 101, max: 5_000 }).map((n) => 's'.repeat(n)) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,100}$/) },
);

export const webChatInput: fc.Arbitrary<WebChatInput> = fc.record({
  route: fc.oneof({ weight: 14, arbitrary: fc.constant<Route>('messages') }, { weight: 2, arbitrary: fc.constant<Route>('reset') }, { weight: 1, arbitrary: fc.constantFrom<Route>('events', 'bots', 'other') }),
  method: fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'POST') }),
  otherPath: fc.nat({ max: 7 }),
  bot: fc.oneof(
    { weight: 10, arbitrary: fc.constant<BotRef>('own') },
    { weight: 1, arbitrary: fc.constantFrom<BotRef>('telegram', 'upper', 'braces', 'urn', 'unknown') },
    { weight: 1, arbitrary: rawSegment.map((raw): BotRef => ({ raw })) },
  ),
  session: fc.oneof(
    { weight: 8, arbitrary: fc.constant<SessionRef>('fresh') },
    { weight: 2, arbitrary: fc.nat({ max: SHARED_SESSIONS - 1 }).map((shared): SessionRef => ({ shared })) },
    { weight: 2, arbitrary: rawSegment.map((raw): SessionRef => ({ raw })) },
  ),
  auth: fc.oneof({ weight: 12, arbitrary: fc.constant<Auth>('valid') }, { weight: 1, arbitrary: fc.constantFrom<Auth>('lowercase', 'padded', 'missing', 'wrong', 'basic', 'twice', 'short', 'tab', 'long') }),
  body,
  contentType: fc.option(fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''), { nil: undefined, freq: 3 }),
  extraHeader: fc.option(headerText(200), { nil: undefined, freq: 6 }),
}, { requiredKeys: ['route', 'bot', 'session', 'auth', 'body'] });

/** A path segment as a client would send it: UTF-8 percent-encoded, lone surrogates as their WTF-8 bytes (what a careless client sends). */
function encodeSegment(raw: string, keepSlashes: boolean): string {
  let out = '';
  for (const ch of raw) {
    const c = ch.codePointAt(0)!;
    out += c >= 0xd800 && c <= 0xdfff ? [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('') : encodeURIComponent(ch);
  }
  return keepSlashes ? out.replace(/%2F/g, '/') : out;
}

interface Chat {
  botId: string;
  sessionKey: string;
}

/** A key of the fuzz run's own: letters, digits and dashes, padded to a key's least length. */
const runKey = (name: string) => name.padEnd(40, 'k');

/** A header value as a client can send one (no control characters, Latin-1 only; else percent-encoded), as the server reads it. */
function headerValue(raw: string): string {
  const sendable = /^[\x20-\x7e\xa0-\xff]*$/.test(raw) ? raw : encodeURIComponent(raw.replace(/[\ud800-\udfff]/g, '\ufffd'));
  // What the server reads: HTTP drops a value's surrounding spaces and tabs.
  return sendable.replace(/^[ \t]+|[ \t]+$/g, '');
}

interface Resolved {
  path: string;
  method: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The bot and session key the ingress will take, when both are ones it accepts. */
  chat?: Chat;
  /** The status the input must get, where the web chat's rules leave no choice. */
  expected?: number;
}

function resolve(fuzz: FuzzSystem, input: WebChatInput, i: number, tag: string): Resolved {
  const own = fuzz.sys.botId;
  const bot = typeof input.bot === 'object' ? encodeSegment(input.bot.raw, false)
    : { own, telegram: fuzz.telegramBotId, upper: own.toUpperCase(), braces: `{${own}}`, urn: `urn:uuid:${own}`, unknown: randomUUID() }[input.bot];
  const sessionKey = input.session === 'fresh' ? runKey(`${tag}-${i}`) : 'shared' in input.session ? runKey(`${tag}-shared-${input.session.shared}`) : headerValue(input.session.raw);
  const chatPath = `/chat/api/bots/${bot}/session`;
  const others = ['/chat/api', `/chat/api/bots/${bot}`, `/chat/api/bots/${bot}/sessions`, chatPath, `${chatPath}/messages/x`, '/chat/x', `${chatPath}/%00`, '/chat/api/bots/'];
  const path = input.route === 'other' ? others[(input.otherPath ?? 0) % others.length] : input.route === 'bots' ? '/chat/api/bots' : `${chatPath}/${input.route}`;
  const method = input.method ?? (input.route === 'other' ? 'POST' : OWN_METHOD[input.route]);
  const token = fuzz.webChatToken;
  const authorization = {
    valid: `Bearer ${token}`,
    lowercase: `bearer ${token}`,
    padded: `Bearer   ${token}  `,
    missing: undefined,
    wrong: `Bearer ${randomBytes(24).toString('base64url')}`,
    basic: `Basic ${token}`,
    twice: `Bearer ${token}, Bearer ${token}`,
    short: `Bearer ${token.slice(0, -1)}`,
    tab: `Bearer\t${token}`,
    long: `Bearer ${'t'.repeat(8_000)}`,
  }[input.auth];
  const headers: Record<string, string> = { [DebugChat.CHAT_SESSION_KEY_HEADER]: sessionKey };
  if (authorization !== undefined) headers.authorization = authorization;
  if (input.contentType !== undefined) headers['content-type'] = input.contentType;
  if (input.extraHeader !== undefined) headers['x-fuzz'] = input.extraHeader;
  const withBody = method !== 'GET' && method !== 'HEAD';
  const raw = input.body === undefined || !withBody ? undefined : Buffer.isBuffer(input.body) ? input.body : Buffer.from(expandDeep(input.body), 'utf8');

  // Only a request that reaches one of the four routes as they are meant has a foreseeable answer.
  const botId = typeof input.bot === 'object' || input.bot === 'unknown' ? null : normalizeBotId(bot);
  const chat = botId && DebugChat.CHAT_SESSION_KEY_RE.test(sessionKey) ? { botId, sessionKey } : undefined;
  let expected: number | undefined;
  // A path reaches its route when the bot id is one segment that survives the URL's normalisation (no
  // slash, not a dot segment, not empty) and decodes: else it is Nest's 404, or a 400 while the route
  // is matched, before the token is looked at.
  const routable = [bot].every((segment) => {
    if (segment === '' || segment.includes('/') || segment === '.' || segment === '..') return false;
    try {
      decodeURIComponent(segment);
      return true;
    } catch {
      return false;
    }
  });
  if (input.route !== 'other' && input.method === undefined && routable) {
    if (!AUTH_OK.has(input.auth)) expected = 401;
    else if (input.route === 'bots') expected = 200;
    else if (!chat) expected = typeof input.bot === 'object' ? undefined : 404;
    else if (input.route === 'events') expected = 200;
    else if (input.route === 'reset') expected = 201;
    else expected = raw && raw.byteLength > MAX_BODY_BYTES ? 413 : acceptableText(raw) ? 202 : 400;
  }
  // Node reads at most 16 KiB of request line and headers: past that the ingress answers 431 before
  // any route (close to the bound, what else the client adds decides).
  const headBytes = Buffer.byteLength(path) + Object.entries(headers).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v) + 4, 0);
  if (headBytes > 16 * 1024) expected = 431;
  else if (headBytes > 15 * 1024) expected = undefined;
  return { path, method, headers, body: raw, chat, expected };
}

/** Whether the web chat takes this body as a message: JSON `{"text": …}` with 1 to 10,000 characters once made storable. */
function acceptableText(raw: Buffer | undefined): boolean {
  if (!raw || raw.byteLength > MAX_BODY_BYTES) return false;
  try {
    const value = (JSON.parse(raw.toString('utf8')) as { text?: unknown } | null)?.text;
    const t = typeof value === 'string' ? storableText(value) : '';
    return t.trim() !== '' && t.length <= MAX_TEXT;
  } catch {
    return false;
  }
}

/**
 * A rejection the browser page (or an operator with curl) can read: JSON with an `error` (the web
 * chat's), a `message` (Nest's, for a path no route has) or a `msg` (LangBot's envelope, which the
 * ingress answers before any route: 431).
 */
function clearRejection(contentType: string | null, text: string): boolean {
  if (!/^application\/json/.test(contentType ?? '')) return false;
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown; msg?: unknown } | null;
    return [parsed?.error, parsed?.message, parsed?.msg].some((m) => typeof m === 'string' && m !== '');
  } catch {
    return false;
  }
}

interface WebChatPart {
  replyTo: string;
  text: string;
  isFinal: boolean;
}

export interface WebChatOptions {
  concurrency?: number;
  /** How long accepted messages may take, in all, to get their final part. */
  finalsDeadlineMs?: number;
}

/**
 * Sends every input to the web chat API with the fuzz system's token (or a wrong one) and checks:
 * never a 5xx; every 4xx is JSON with a readable error (see clearRejection); where the rules leave no choice (a missing or wrong
 * token is 401, a bot or session key the page would not make is 404, a text of 1 to 10,000 characters is
 * taken) that is the answer; every 202 gets exactly one final part on the web chat stream, and on the
 * browser's event stream for the sessions that had one open. Afterwards each session that took
 * messages answers one more, and none holds a lease, queue entry or reply behind in Redis.
 */
export async function fuzzWebChat(fuzz: FuzzSystem, inputs: WebChatInput[], options: WebChatOptions = {}): Promise<CategoryReport> {
  const report = emptyReport('web-chat');
  const { sys } = fuzz;
  const ingress = sys.services.get('ingress').url;
  const tag = uniqueName('w');
  const auth = { authorization: `Bearer ${fuzz.webChatToken}` };
  sys.llm.setDefault(shortEcho);

  // Every part the dispatcher sends to any web chat session of the system, as the ingress gets it.
  const parts: WebChatPart[] = [];
  const nc = await connect({ servers: NATS_URL });
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 3 });
  // The browser's view: an event stream open on each shared session for the whole run.
  const streams = Array.from({ length: SHARED_SESSIONS }, (_, n) => ({ sessionKey: runKey(`${tag}-shared-${n}`), abort: new AbortController(), text: '' }));
  const inSession = (sessionKey: string) => ({ ...auth, [DebugChat.CHAT_SESSION_KEY_HEADER]: sessionKey });
  try {
    nc.subscribe(sys.topology.subjects.allWebchatSessions, { callback: (err, msg) => void (err || parts.push(msg.json<WebChatPart>())) });
    await nc.flush();
    for (const s of streams) {
      const res = await fetch(`${ingress}/chat/api/bots/${sys.botId}/session/events`, { headers: inSession(s.sessionKey), signal: s.abort.signal });
      if (res.status !== 200 || !res.body) throw new Error(`the event stream of ${s.sessionKey} answered ${res.status}`);
      const decoder = new TextDecoder();
      void (async () => {
        for await (const chunk of res.body!) s.text += decoder.decode(chunk, { stream: true });
      })().catch(() => undefined);
    }

    const accepted: { replyTo: string; chat: Chat; input: string }[] = [];
    const resetChats: Chat[] = [];
    await forEachLimit(inputs, options.concurrency ?? 4, async (input, i) => {
      report.inputs++;
      const req = resolve(fuzz, input, i, tag);
      const shown = `${req.method} ${req.path.slice(0, 200)} ${preview(input)}`;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), 60_000);
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${ingress}${req.path}`, { method: req.method, headers: req.headers, body: req.body, signal: abort.signal });
        // An open event stream is taken as it is: what it carries is checked on the shared sessions.
        if (res.status === 200 && /^text\/event-stream/.test(res.headers.get('content-type') ?? '')) {
          abort.abort();
          text = '';
        } else text = await res.text();
      } catch (err) {
        report.failures.push({ problem: requestFailure(err), input: shown });
        return;
      } finally {
        clearTimeout(timer);
      }
      if (res.status >= 500) {
        report.failures.push({ problem: `${res.status} answer: ${text.slice(0, 200)}`, input: shown });
        return;
      }
      if (req.expected !== undefined && res.status !== req.expected) {
        report.failures.push({ problem: `${res.status} where ${req.expected} was due: ${text.slice(0, 200)}`, input: shown });
        return;
      }
      if (res.status >= 400) {
        report.status4xx++;
        if (req.method !== 'HEAD' && !clearRejection(res.headers.get('content-type'), text)) {
          report.failures.push({ problem: `${res.status} without a JSON error: ${res.headers.get('content-type')} ${text.slice(0, 200)}`, input: shown });
        }
        return;
      }
      report.status2xx++;
      if (req.method !== 'POST' || !req.chat) return;
      if (res.status === 201 && req.path.endsWith('/reset')) resetChats.push(req.chat);
      if (res.status !== 202) return;
      const { replyTo } = JSON.parse(text) as { replyTo?: unknown };
      if (typeof replyTo !== 'string') report.failures.push({ problem: `202 without a replyTo: ${text.slice(0, 200)}`, input: shown });
      else accepted.push({ replyTo, chat: req.chat, input: shown });
    });

    const finals = (replyTo: string) => parts.filter((p) => p.replyTo === replyTo && p.isFinal);
    await waitUntil('a final part for every accepted message', () => accepted.every((a) => finals(a.replyTo).length > 0) || deadService(fuzz) !== undefined, options.finalsDeadlineMs ?? 120_000 + 100 * accepted.length, 250).catch(() => undefined);
    // A moment for any second final part to show up.
    await new Promise((r) => setTimeout(r, 2_000));
    for (const a of accepted) {
      const found = finals(a.replyTo);
      if (found.length !== 1) report.failures.push({ problem: found.length === 0 ? '202 but no final part' : `202 and ${found.length} final parts`, input: a.input });
      else if (found[0].text.includes(FAILURE_HINT)) report.failures.push({ problem: `answered with the failure notice: ${found[0].text.slice(0, 100)}`, input: a.input });
      else if (a.chat.botId === sys.botId && streams.some((s) => s.sessionKey === a.chat.sessionKey) && !streams.some((s) => s.sessionKey === a.chat.sessionKey && s.text.includes(`"replyTo":"${a.replyTo}"`))) {
        report.failures.push({ problem: 'a final part that the open event stream did not carry', input: a.input });
      }
    }

    // Each session that took messages or a reset still answers, and nothing of it is left in Redis.
    const used = new Map<string, Chat>();
    for (const c of [...accepted.map((a) => a.chat), ...resetChats]) used.set(`${c.botId}\u0000${c.sessionKey}`, c);
    const asked: { replyTo: string; botId: string; sessionId: string }[] = [];
    for (const chat of used.values()) {
      const res = await fetch(`${ingress}/chat/api/bots/${chat.botId}/session/messages`, { method: 'POST', headers: inSession(chat.sessionKey), body: JSON.stringify({ text: 'still there?' }) });
      if (res.status !== 202) report.failures.push({ problem: `a session that took messages answered ${res.status} to the next`, input: chat.sessionKey });
      else {
        const { replyTo, sessionId } = (await res.json()) as { replyTo: string; sessionId: string };
        asked.push({ replyTo, botId: chat.botId, sessionId });
      }
    }
    await waitUntil('a final part for every next message', () => asked.every((a) => finals(a.replyTo).length > 0), 90_000, 250).catch(() => undefined);
    for (const a of asked.filter((x) => finals(x.replyTo).length === 0)) report.failures.push({ problem: 'a session no longer answers after the fuzz inputs', input: a.sessionId });

    await redis.connect();
    const keys = redisKeys(sys.prefix);
    const leftovers = async () => {
      const out: string[] = [];
      for (const { botId, sessionId } of asked) {
        const session = { botId, adapter: 'webchat' as const, launcherType: 'person', launcherId: sessionId };
        const [lease, queued, replies] = await Promise.all([
          redis.exists(keys.sessionLease(session)),
          redis.zcard(keys.sessionQueue(session)),
          redis.zcard(keys.replySessionReplies({ botId, adapter: 'webchat', sessionId })),
        ]);
        if (lease + queued + replies > 0) out.push(`${sessionId}: lease ${lease}, queued ${queued}, replies ${replies}`);
      }
      return out;
    };
    let left: string[] = [];
    await waitUntil('no lease, queue entry or reply left', async () => (left = await leftovers()).length === 0, 30_000, 500).catch(() => undefined);
    for (const l of left) report.failures.push({ problem: 'a session left state behind in Redis', input: l });
  } finally {
    for (const s of streams) s.abort.abort();
    redis.disconnect();
    await nc.close();
  }
  const dead = deadService(fuzz);
  if (dead) report.failures.push({ problem: 'a service died', input: dead });
  return report;
}
