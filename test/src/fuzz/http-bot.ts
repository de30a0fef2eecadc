import fc from 'fast-check';
import { sign } from '@conveyor/http-bot';
import { createPrismaClient } from '@conveyor/persistence';
import { LIMITS } from '@conveyor/contracts';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { anyTypedValue, deepPlaceholder, expandDeep, headerText, hostileText, smallJson } from './arbitraries.js';
import { emptyReport, forEachLimit, preview, requestFailure, type CategoryReport } from './report.js';
import { waitUntil } from '../harness/wait.js';

type SignatureMode = 'valid' | 'missing' | 'wrong' | 'stale' | 'garbage-timestamp';

export interface HttpBotInput {
  subPath: string;
  body: string | Buffer;
  signature: SignatureMode;
  idempotencyKey?: string;
  contentType?: string;
  requestId?: string;
  /** Characters of a header that puts the request past Node's 16 KiB header bound (the ingress answers 431). */
  oversizedHeader?: number;
}

const plain = hostileText(60).map((text) => ({ type: 'Plain', text }));
const component: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: plain },
  { weight: 1, arbitrary: anyTypedValue.map((target) => ({ type: 'At', target })) },
  { weight: 1, arbitrary: fc.constant({ type: 'AtAll' }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('Image'), url: hostileText(), base64: fc.option(hostileText(), { nil: undefined }) }, { requiredKeys: ['type'] }) },
  { weight: 1, arbitrary: fc.array(plain, { maxLength: 3 }).map((origin) => ({ type: 'Quote', origin })) },
  { weight: 1, arbitrary: deepPlaceholder().map((origin) => ({ type: 'Quote', origin })) },
  { weight: 1, arbitrary: fc.record({ type: hostileText(12), text: anyTypedValue }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('Plain'), text: anyTypedValue }) },
  { weight: 1, arbitrary: smallJson },
);

const message: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 10, arbitrary: fc.array(component, { minLength: 1, maxLength: 5 }) },
  { weight: 1, arbitrary: fc.constant([]) },
  { weight: 1, arbitrary: fc.integer({ min: 1_001, max: 1_500 }).map((n) => Array.from({ length: n }, () => ({ type: 'Plain', text: 'x' }))) },
  // Large texts, some past what the bus takes once routing and history are added.
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: LIMITS.inboundBodyBytes }).map((n) => [{ type: 'Plain', text: 'y'.repeat(n) }]) },
  { weight: 2, arbitrary: anyTypedValue },
);

const sessionId: fc.Arbitrary<unknown> = fc.oneof(
  // Mostly distinct sessions, so the session order does not serialise the whole run.
  { weight: 6, arbitrary: fc.tuple(fc.nat(), hostileText(30)).map(([n, text]) => `fz${n}-${text}`) },
  { weight: 2, arbitrary: anyTypedValue },
  { weight: 1, arbitrary: fc.integer({ min: 257, max: 5_000 }).map((n) => 's'.repeat(n)) },
);

const sender: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ id: anyTypedValue, name: anyTypedValue, group_name: anyTypedValue }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: anyTypedValue },
);

const bodyObject: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      session_id: sessionId,
      message,
      session_type: fc.oneof(fc.constantFrom('person', 'group', 'group', ''), anyTypedValue),
      sender,
      extra: fc.dictionary(hostileText(10), smallJson, { maxKeys: 3 }),
    },
    { requiredKeys: [] },
  )
  .map(({ extra, ...fields }) => ({ ...(extra ?? {}), ...fields }));

const rawBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.constantFrom('', '{', '{"session_id":', 'null', '[]', '"text"', '123', 'true', '{"session_id":"s","message":[}', '\ufeff{"session_id":"s","message":[]}', '{"a":1}{"b":2}'),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  // Valid JSON but invalid UTF-8 inside a string.
  fc.constant(Buffer.concat([Buffer.from('{"session_id":"s","message":[{"type":"Plain","text":"'), Buffer.from([0xff, 0xfe, 0xc0]), Buffer.from('"}]}')])),
  smallJson.map((v) => JSON.stringify(v) ?? 'null'),
  // Over the 1 MiB body bound.
  fc.integer({ min: LIMITS.inboundBodyBytes + 1, max: LIMITS.inboundBodyBytes + 200_000 }).map((n) => `{"session_id":"s","message":[{"type":"Plain","text":"${'z'.repeat(n)}"}]}`),
);

export const httpBotInput: fc.Arbitrary<HttpBotInput> = fc.record({
  subPath: fc.oneof({ weight: 20, arbitrary: fc.constant('') }, { weight: 2, arbitrary: fc.constant('reset') }, { weight: 1, arbitrary: fc.constant('sync') }, { weight: 1, arbitrary: fc.constantFrom('x', 'sync/x', 'reset/', 'x/y/z', '%00') }),
  body: fc.oneof({ weight: 6, arbitrary: bodyObject.map((o) => expandDeep(JSON.stringify(o))) }, { weight: 1, arbitrary: rawBody }),
  signature: fc.oneof({ weight: 12, arbitrary: fc.constant<SignatureMode>('valid') }, { weight: 1, arbitrary: fc.constantFrom<SignatureMode>('missing', 'wrong', 'stale', 'garbage-timestamp') }),
  idempotencyKey: fc.option(headerText(), { nil: undefined, freq: 4 }),
  contentType: fc.option(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', ''), { nil: undefined, freq: 4 }),
  requestId: fc.option(headerText(200), { nil: undefined, freq: 4 }),
  oversizedHeader: fc.oneof({ weight: 30, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 16_500, max: 100_000 }) }),
}, { requiredKeys: ['subPath', 'body', 'signature'] });

function headersFor(input: HttpBotInput, secret: string, raw: Buffer): Record<string, string> {
  const now = Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = { 'content-type': input.contentType ?? 'application/json' };
  if (input.idempotencyKey !== undefined) headers['x-lb-idempotency-key'] = input.idempotencyKey;
  if (input.requestId !== undefined) headers['x-request-id'] = input.requestId;
  if (input.oversizedHeader !== undefined) headers['x-padding'] = 'p'.repeat(input.oversizedHeader);
  const ts = input.signature === 'stale' ? String(now - 3_600) : input.signature === 'garbage-timestamp' ? 'inf' : String(now);
  if (input.signature === 'missing') return headers;
  headers['x-lb-timestamp'] = ts;
  headers['x-lb-signature'] = input.signature === 'wrong' ? sign(`${secret}-wrong`, ts, raw) : sign(secret, ts, raw);
  return headers;
}

/** The envelope's code for each status LangBot's adapter answers with. */
const ENVELOPE_CODES: Record<number, number> = { 400: 40001, 401: 40101, 409: 40901, 413: 41301, 431: 43101 };

function envelopeProblem(status: number, body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return `${status} without a JSON object body`;
  const { code, msg, data } = body as Record<string, unknown>;
  if (typeof code !== 'number' || typeof msg !== 'string' || data !== null) return `${status} body is not LangBot's {code, msg, data: null}`;
  const expected = ENVELOPE_CODES[status];
  if (expected === undefined) return `unexpected status ${status}`;
  if (code !== expected) return `${status} with code ${code}, expected ${expected}`;
  return undefined;
}

export interface HttpBotOptions {
  /** Requests in flight at once. */
  concurrency?: number;
  /** How long accepted messages may take, in all, to get their final callback. */
  finalsDeadlineMs?: number;
}

/**
 * Posts every input to the HTTP-bot route and checks the answer: never a 5xx; a 4xx carries LangBot's
 * envelope with the code for its status; a 202 is followed by exactly one final callback for its
 * accepted message id.
 */
export async function fuzzHttpBot(fuzz: FuzzSystem, inputs: HttpBotInput[], options: HttpBotOptions = {}): Promise<CategoryReport> {
  const report = emptyReport('http-bot');
  const { sys } = fuzz;
  const url = `${sys.services.get('ingress').url}/bots/${sys.botId}`;
  const accepted: { replyTo: string; sessionId: string; input: HttpBotInput }[] = [];
  /**
   * Sessions a /sync call waited on. While one waits, every reply of its session goes into the sync
   * answer instead of a callback (as in LangBot), so a push there may get its final that way.
   */
  const syncedSessions = new Set<string>();
  await forEachLimit(inputs, options.concurrency ?? 4, async (input) => {
    report.inputs++;
    const raw = Buffer.isBuffer(input.body) ? input.body : Buffer.from(input.body, 'utf8');
    let res: Response;
    try {
      res = await fetch(`${url}${input.subPath ? `/${input.subPath}` : ''}`, { method: 'POST', headers: headersFor(input, sys.inboundSecret, raw), body: raw });
    } catch (err) {
      report.failures.push({ problem: requestFailure(err), input: preview(input) });
      return;
    }
    const text = await res.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (res.status >= 500) {
      report.failures.push({ problem: `${res.status} answer: ${text.slice(0, 200)}`, input: preview(input) });
      return;
    }
    if (input.oversizedHeader !== undefined && res.status !== 431) {
      report.failures.push({ problem: `${res.status} to headers over the 16 KiB bound, where 431 was due`, input: preview(input) });
      return;
    }
    if (res.status >= 400) {
      report.status4xx++;
      const problem = envelopeProblem(res.status, body);
      if (problem) report.failures.push({ problem, input: preview(input) });
      return;
    }
    if (res.status < 200 || res.status >= 300) {
      report.failures.push({ problem: `unexpected status ${res.status}`, input: preview(input) });
      return;
    }
    report.status2xx++;
    if (input.subPath === 'sync' && res.status === 200) {
      const session = (body as { data?: { session_id?: unknown } } | undefined)?.data?.session_id;
      if (typeof session === 'string') syncedSessions.add(session);
    }
    if (res.status !== 202) return;
    const data = (body as { data?: { accepted_message_id?: unknown; session_id?: unknown } } | undefined)?.data;
    if (typeof data?.accepted_message_id !== 'string' || typeof data.session_id !== 'string') {
      report.failures.push({ problem: `202 without data.accepted_message_id and data.session_id: ${text.slice(0, 200)}`, input: preview(input) });
      return;
    }
    accepted.push({ replyTo: data.accepted_message_id, sessionId: data.session_id, input });
  });

  const finals = (replyTo: string) => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo && c.json?.is_final === true).length;
  // Messages of one session are answered one after another; a long queue on one session takes a while.
  const deadlineMs = options.finalsDeadlineMs ?? 120_000 + 100 * accepted.length;
  await waitUntil('a final callback for every accepted message', () => accepted.every((a) => finals(a.replyTo) >= 1) || deadService(fuzz) !== undefined, deadlineMs, 250).catch(() => undefined);
  // A moment for any second final part to show up.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const prisma = createPrismaClient(sys.db.url);
  try {
    for (const a of accepted) {
      const n = finals(a.replyTo);
      if (n === 1 || (n === 0 && syncedSessions.has(a.sessionId))) continue;
      // Where the session's queries are, for the report: a query still running, or none recorded at all.
      const records = await prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId: a.sessionId }, orderBy: { receivedAt: 'asc' }, select: { status: true, error: true } });
      const states = records.map((r) => `${r.status}${r.error ? ` (${r.error.slice(0, 80)})` : ''}`).join(', ');
      report.failures.push({ problem: n === 0 ? '202 but no final callback' : `202 and ${n} final callbacks`, input: `${preview(a.input)}\n      queries of session ${JSON.stringify(a.sessionId.slice(0, 60))}: ${states || 'none'}` });
    }
  } finally {
    await prisma.$disconnect();
  }
  const dead = deadService(fuzz);
  if (dead) report.failures.push({ problem: 'a service died', input: dead });
  return report;
}
