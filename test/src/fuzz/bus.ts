import fc from 'fast-check';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { z } from 'zod';
import { LIMITS, MaxDeliveriesAdvisory, QueryEnvelope, RunnerEvent, RunRequest, type ConsumerSpec, type DeadLetter, type StreamSpec } from '@conveyor/contracts';
import { deadLetterPayload, readDeadLetters } from '@conveyor/bus';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { hostileText, nearMiss } from './arbitraries.js';
import { emptyReport, preview, type CategoryReport } from './report.js';
import { NATS_URL } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

export type BusTarget = 'query' | 'run' | 'event' | 'advisory';

/** How a payload was made, for the report. */
export type BusPayloadKind = 'bytes' | 'json' | 'deep' | 'near' | 'valid';

export interface BusInput {
  target: BusTarget;
  kind: BusPayloadKind;
  /** For near and valid payloads: the index of the victim session the message names. */
  victim?: number;
  payload: unknown;
}

const VALID_SCHEMA: Record<BusTarget, z.ZodType> = { query: QueryEnvelope, run: RunRequest, event: RunnerEvent, advisory: MaxDeliveriesAdvisory };

/** Sessions the schema-near and valid payloads name, answered by a real message afterwards. */
export const VICTIM_SESSIONS = 4;

/** Placeholders the generated messages hold, replaced by the run's bot id and victim session names. */
const BOT = '@@BOT@@';
const victimName = (i: number) => `@@VICTIM:${i}@@`;

const uuid = fc.uuid({ version: 4 });
const iso = fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
const text = hostileText(40);

const route = (victim: number) =>
  fc.record({
    botId: fc.oneof({ weight: 4, arbitrary: fc.constant(BOT) }, { weight: 1, arbitrary: uuid }),
    adapter: fc.oneof({ weight: 4, arbitrary: fc.constant('http-bot') }, { weight: 1, arbitrary: fc.constantFrom('telegram', 'webchat') }),
    sessionId: fc.constant(victimName(victim)),
    launcherType: fc.constant('person'),
    launcherId: fc.constant(victimName(victim)),
    senderId: fc.constant(victimName(victim)),
    replyTo: fc.oneof(uuid.map((u) => `in_${u.replace(/-/g, '')}`), text),
    stream: fc.option(fc.boolean(), { nil: undefined }),
  }, { requiredKeys: ['botId', 'adapter', 'sessionId', 'launcherType', 'launcherId', 'senderId', 'replyTo'] });

const chain = fc.array(text.map((t) => ({ type: 'Plain', text: t })), { minLength: 1, maxLength: 3 });

const query = (victim: number) =>
  fc.record({ v: fc.constant(1), queryId: uuid, receivedAt: iso, route: route(victim), senderName: text, messageChain: chain });

const llmMessage = fc.record({ role: fc.constantFrom('system', 'user', 'assistant', 'tool'), content: text });

const run = (victim: number) =>
  fc.record({
    v: fc.constant(1),
    queryId: uuid,
    pipelineId: fc.oneof(fc.constant('default'), text),
    route: route(victim),
    conversationId: uuid,
    model: fc.record({ primary: fc.oneof(fc.constant('fake'), text), fallbacks: fc.array(text, { maxLength: 2 }) }),
    stream: fc.boolean(),
    messages: fc.array(llmMessage, { minLength: 1, maxLength: 4 }),
    exceptionHandling: fc.constantFrom('show-error', 'show-hint', 'hide'),
    failureHint: text,
    runner: fc.option(fc.constantFrom('local-agent', 'dify-service-api', 'n8n-service-api'), { nil: undefined }),
  }, { requiredKeys: ['v', 'queryId', 'pipelineId', 'route', 'conversationId', 'model', 'stream', 'messages', 'exceptionHandling', 'failureHint'] });

const eventBody = fc.oneof(
  fc.record({ kind: fc.constant('chunk'), text, isFinal: fc.boolean(), hasToolCalls: fc.boolean() }),
  fc.record({ kind: fc.constant('message'), message: llmMessage }),
  fc.record({ kind: fc.constant('tool_result'), toolCallId: text, name: text, content: text }),
  fc.record({ kind: fc.constant('error'), error: text, userText: fc.option(text, { nil: null }) }),
  fc.record({ kind: fc.constant('done') }),
  fc.record({ kind: fc.constant('notice'), text }),
  fc.record({ kind: fc.constant('command_reply'), text }),
  fc.record({ kind: fc.constant('plugin_reply'), chain }),
);

/**
 * A stray event that does not end its reply (anything but done or error) holds its session's later
 * replies back until the reply queue's stall bound (15 minutes) gives it up: a known limit, documented
 * in docs/RELIABILITY.md. Those go to sessions of their own; ending events name the victim sessions.
 */
const STRAY_SESSION = '@@STRAY@@';
const ENDING_KINDS = new Set(['done', 'error']);

const event = (victim: number) =>
  fc.tuple(fc.record({ v: fc.constant(1), queryId: uuid, route: route(victim), attempt: fc.integer({ min: 1, max: 6 }), seq: fc.integer({ min: 0, max: 20 }) }), eventBody)
    .map(([base, body]) => {
      if (ENDING_KINDS.has(body.kind)) return { ...base, ...body };
      const stray = { ...base.route, sessionId: STRAY_SESSION, launcherId: STRAY_SESSION, senderId: STRAY_SESSION };
      return { ...base, route: stray, ...body };
    });

/** Stream sequences far past anything the run stream holds: an advisory about a message that is gone. */
const advisory = fc.record({ stream_seq: fc.integer({ min: 1e12, max: 2e12 }), deliveries: fc.integer({ min: 0, max: 10 }), type: fc.constant('io.nats.jetstream.advisory.v1.max_deliver') });

const validFor = (target: BusTarget, victim: number): fc.Arbitrary<unknown> =>
  target === 'query' ? query(victim) : target === 'run' ? run(victim) : target === 'event' ? event(victim) : advisory;

/** A valid message with one field replaced by a value of another type, or removed. */
const nearFor = (target: BusTarget, victim: number) => nearMiss(validFor(target, victim));

export const busInput: fc.Arbitrary<BusInput> = fc
  .tuple(fc.constantFrom<BusTarget>('query', 'run', 'event', 'event', 'advisory'), fc.integer({ min: 0, max: VICTIM_SESSIONS - 1 }))
  .chain(([target, victim]) =>
    fc.oneof(
      { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b): BusInput => ({ target, kind: 'bytes', payload: Buffer.from(b) })) },
      { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((j): BusInput => ({ target, kind: 'json', payload: j })) },
      { weight: 1, arbitrary: fc.integer({ min: 100, max: 30_000 }).map((n): BusInput => ({ target, kind: 'deep', payload: Buffer.from(`${'{"route":'.repeat(n)}{}${'}'.repeat(n)}`) })) },
      { weight: 6, arbitrary: nearFor(target, victim).map((p): BusInput => ({ target, kind: 'near', victim, payload: p })) },
      { weight: 2, arbitrary: validFor(target, victim).map((p): BusInput => ({ target, kind: 'valid', victim, payload: p })) },
    ),
  );

function encode(input: BusInput, botId: string, victims: string[], strayName: string): Buffer {
  if (Buffer.isBuffer(input.payload)) return input.payload;
  const json = JSON.stringify(input.payload) ?? 'null';
  return Buffer.from(json.replaceAll(BOT, botId).replace(/@@VICTIM:(\d+)@@/g, (_, i: string) => victims[Number(i)]).replaceAll(STRAY_SESSION, strayName));
}

export interface BusOptions {
  /** How long the consumers may take to settle every payload. */
  drainDeadlineMs?: number;
  /** How long a victim session may take to answer its real message. */
  victimDeadlineMs?: number;
}

/**
 * Publishes every payload straight to its stream, then checks: every consumer drains (nothing pending,
 * nothing unacknowledged); what was not handled is in the dead letters with a reason; the services
 * still run; and each victim session, named by the schema-near and valid payloads, still answers a
 * real message.
 */
export async function fuzzBus(fuzz: FuzzSystem, inputs: BusInput[], options: BusOptions = {}): Promise<CategoryReport & { otherDeadLetters: DeadLetter[] }> {
  const report = emptyReport('bus');
  const { sys } = fuzz;
  const topo = sys.topology;
  const victims = Array.from({ length: VICTIM_SESSIONS }, () => uniqueName('victim'));
  const nc = await connect({ servers: NATS_URL });
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const subjectFor: Record<BusTarget, string> = {
      query: topo.subjects.query(sys.botId),
      run: topo.subjects.run(sys.botId),
      event: topo.subjects.event(sys.botId),
      advisory: topo.streams.runAdvisories.subjects[0],
    };
    const streamFor: Record<BusTarget, StreamSpec> = { query: topo.streams.queries, run: topo.streams.runs, event: topo.streams.events, advisory: topo.streams.runAdvisories };
    const runTag = uniqueName('bus');
    /** Published payloads by their dead-letter form (the first 64 KiB), to match dead letters against. */
    const published = new Map<string, BusInput>();
    for (const [i, input] of inputs.entries()) {
      const bytes = encode(input, sys.botId, victims, `${runTag}-stray-${i}`);
      // The broker refuses what is over the stream's bound (headers take some room too): nothing to check.
      if (bytes.byteLength > streamFor[input.target].maxMsgSize - 1_024) continue;
      report.inputs++;
      // Generated "valid" payloads can break a bound the generators do not know (an id's length): the schema decides.
      if (input.kind === 'valid' && !VALID_SCHEMA[input.target].safeParse(JSON.parse(bytes.toString('utf8'))).success) input.kind = 'near';
      await js.publish(subjectFor[input.target], bytes, { msgID: `${runTag}-${i}` });
      published.set(`${subjectFor[input.target]}\u0000${bytes.subarray(0, LIMITS.deadLetterPayloadBytes).toString('base64')}`, input);
    }

    const consumers: ConsumerSpec[] = Object.values(topo.consumers);
    const unsettled = async () => {
      const out: string[] = [];
      for (const spec of consumers) {
        const info = await jsm.consumers.info(spec.stream, spec.durable);
        if (info.num_pending + info.num_ack_pending > 0) out.push(`${spec.durable}: ${info.num_pending} pending, ${info.num_ack_pending} unacknowledged`);
      }
      return out;
    };
    let stuck: string[] = [];
    await waitUntil('every consumer to drain', async () => {
      stuck = await unsettled();
      return stuck.length === 0 || deadService(fuzz) !== undefined;
    }, options.drainDeadlineMs ?? 240_000, 500).catch(() => undefined);
    if (stuck.length > 0) report.failures.push({ problem: 'a consumer did not drain', input: stuck.join('; ') });

    const deadLetters = await readDeadLetters(js, topo.streams.deadLetters, topo.subjects.allDeadLetters, { waitMs: 5_000 });
    const otherDeadLetters: DeadLetter[] = [];
    const matched = new Set<string>();
    for (const dl of deadLetters) {
      const key = `${dl.subject}\u0000${deadLetterPayload(dl).toString('base64')}`;
      const input = published.get(key);
      if (!input) {
        otherDeadLetters.push(dl);
        continue;
      }
      matched.add(key);
      if (!dl.reason || !dl.error) report.failures.push({ problem: 'a dead letter without a reason', input: preview(dl) });
      // A valid message that was refused, rather than garbage, is worth a look: say why.
      if (input.kind === 'valid' && dl.reason !== 'handler_rejected') {
        // The services' own account of it, for the report.
        const queryId = (input.payload as { queryId?: unknown }).queryId;
        const logged = typeof queryId === 'string' ? sys.services.allLogs().split('\n').find((l) => l.includes(queryId) && /"level":50/.test(l)) : undefined;
        report.failures.push({
          problem: `a valid ${input.target} dead-lettered as ${dl.reason}: ${headAndTail(dl.error.replace(/\s+/g, ' '), 200)}`,
          input: `${preview(input.payload)}${logged ? `\n      logged: ${logged.slice(0, 1_500)}` : ''}`,
        });
      }
    }
    report.deadLettered = matched.size;
    report.handled = published.size - matched.size;

    // Each victim session still answers: no lease, reply or queue entry left behind by the garbage.
    const asked: { victim: number; replyTo: string }[] = [];
    for (const [i, victim] of victims.entries()) {
      const res = await sys.post({ session_id: victim, message: [{ type: 'Plain', text: 'still there?' }] });
      if (res.status !== 202) report.failures.push({ problem: `victim session answered ${res.status}`, input: victim });
      else asked.push({ victim: i, replyTo: ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id });
    }
    const answered = (replyTo: string) => sys.callbacks.received.some((c) => c.json?.reply_to === replyTo && c.json?.is_final === true);
    await waitUntil('a final reply on every victim session', () => asked.every((a) => answered(a.replyTo)), options.victimDeadlineMs ?? 90_000, 250).catch(() => undefined);
    for (const a of asked.filter((x) => !answered(x.replyTo))) {
      const named = inputs.filter((input) => input.victim === a.victim && (input.kind === 'valid' || input.kind === 'near'));
      report.failures.push({
        problem: 'a session named by bus payloads no longer answers',
        input: `${victims[a.victim]}, named by ${named.length} payloads: ${named.map((n) => `${n.target}/${n.kind} ${preview(n.payload)}`).join(' ;; ')}`,
      });
    }
    const dead = deadService(fuzz);
    if (dead) report.failures.push({ problem: 'a service died', input: dead });
    return { ...report, otherDeadLetters };
  } finally {
    await nc.close();
  }
}

/** The start and the end of a long text (an error's cause is often at its end). */
function headAndTail(text: string, chars: number): string {
  return text.length <= 2 * chars ? text : `${text.slice(0, chars)} … ${text.slice(-chars)}`;
}
