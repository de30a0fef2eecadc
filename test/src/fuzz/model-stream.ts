import fc from 'fast-check';
import { createPrismaClient } from '@conveyor/persistence';
import type { ChatRequestBody, FakeResponse } from '../fakes/index.js';
import type { FuzzSystem } from './fuzz-system.js';
import { deadService } from './fuzz-system.js';
import { hostileText } from './arbitraries.js';
import { emptyReport, forEachLimit, preview, type CategoryReport } from './report.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

/** The pipeline's `output.misc.failure-hint` (LangBot's default): what the user sees when a run fails. */
const FAILURE_HINT = 'Request failed.';

const chunk = (delta: unknown, finish: unknown = null) =>
  JSON.stringify({ id: 'chatcmpl-fuzz', object: 'chat.completion.chunk', created: 1, model: 'fake-model', choices: [{ index: 0, delta, finish_reason: finish }] });

const brokenJson = fc.oneof(
  fc.constantFrom('{', '{"a":', '{"a":1,}', '[1,2', 'null', '"str"', '{"a":"\\ud800"}', 'NaN', '{}}', '', '{"q": "unterminated'),
  hostileText(30),
);

/** One SSE event (or something in its place). */
const sseEvent: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: hostileText(40).map((t) => `data: ${chunk({ content: t })}\n\n`) },
  { weight: 1, arbitrary: fc.integer({ min: 50_000, max: 900_000 }).map((n) => `data: ${chunk({ content: 'h'.repeat(n) })}\n\n`) },
  { weight: 2, arbitrary: fc.tuple(fc.nat({ max: 3 }), fc.oneof(fc.constantFrom('lookup', 'no.such.tool', ''), hostileText(20)), brokenJson).map(([index, name, args]) =>
    `data: ${chunk({ tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name, arguments: '' } }] })}\n\ndata: ${chunk({ tool_calls: [{ index, function: { arguments: args } }] })}\n\n`) },
  { weight: 1, arbitrary: brokenJson.map((args) => `data: ${chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] })}\n\n`) },
  { weight: 1, arbitrary: fc.constantFrom(
    'data: {"choices":[{"delta":\n\n',
    'data: hello\n\n',
    'event: error\ndata: {"error":{"message":"upstream exploded"}}\n\n',
    'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n',
    ': keep-alive\n\n',
    'data: {"id":"x","choices":[]}\n\n',
    'data: {"id":"x","choices":null}\n\n',
    'data: {"id":"x","choices":[{"index":0,"delta":null}]}\n\n',
    'data: {"id":"x","choices":[{"index":5,"delta":{"content":"other choice"}}]}\n\n',
    `data: ${chunk({ role: 'assistant', content: '' })}\r\n\r\n`,
    `data: ${chunk({ content: 'no separator' })}\n`,
    'retry: 1\n\n',
    'data: [DONE]\n\n',
  ) },
  { weight: 1, arbitrary: fc.constantFrom('stop', 'length', 'tool_calls', 'content_filter', 'bogus', null).map((finish) => `data: ${chunk({}, finish)}\n\n`) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
);

export const modelResponse: fc.Arbitrary<FakeResponse> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      events: fc.array(sseEvent, { maxLength: 8 }),
      done: fc.boolean(),
      ending: fc.constantFrom<'end' | 'destroy'>('end', 'end', 'destroy'),
    }).map(({ events, done, ending }) => ({ raw: { chunks: [`data: ${chunk({ role: 'assistant', content: '' })}\n\n`, ...events, ...(done ? ['data: [DONE]\n\n'] : [])], ending } })),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      status: fc.constantFrom(200, 400, 401, 404, 413, 429, 500, 502, 503),
      contentType: fc.constantFrom('text/html', 'application/json', 'text/plain', 'text/event-stream'),
      body: fc.oneof(fc.constantFrom('<html>Bad Gateway</html>', '{"error":{"message":"nope"}}', '{"error":"flat"}', '', 'null', '{"choices":[]}'), hostileText(40)),
    }).map(({ status, contentType, body }) => ({ raw: { status, contentType, chunks: [body] } })),
  },
  { weight: 1, arbitrary: fc.record({ text: fc.integer({ min: 50_000, max: 1_500_000 }).map((n) => 'w'.repeat(n)), chunkSize: fc.constantFrom(1_000, 100_000, 2_000_000) }) },
  { weight: 2, arbitrary: fc.array(fc.record({ name: fc.oneof(fc.constantFrom('lookup', 'a.b', ''), hostileText(20)), arguments: brokenJson }), { minLength: 1, maxLength: 3 }).map((toolCalls) => ({ toolCalls })) },
);

/** The case marker in the user's text, which routes the fake model's answer to the case's generated response. */
const MARKER = /mcase-(\d+)-(\w+)/;

function isLaterRound(body: ChatRequestBody): boolean {
  return (body.messages ?? []).some((m) => m.role === 'tool' || (m.role === 'assistant' && Array.isArray(m.tool_calls)));
}

/**
 * Sends one message per generated model response; the fake model serves that response (a later tool
 * round gets a plain answer). Each run must end within the deadline with a final reply or a visible
 * failure hint, and the runner must keep running.
 */
export async function fuzzModelStreams(fuzz: FuzzSystem, responses: FakeResponse[], options: { concurrency?: number; deadlineMs?: number } = {}): Promise<CategoryReport> {
  const report = emptyReport('model-stream');
  const { sys } = fuzz;
  const runTag = uniqueName('m');
  const marker = (i: number) => `mcase-${i}-${runTag}`;
  sys.llm.setDefault((body) => {
    const user = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
    const found = MARKER.exec(JSON.stringify(user?.content ?? ''));
    if (!found || found[2] !== runTag) return { text: `Echo: ${JSON.stringify(user?.content ?? '').slice(0, 200)}` };
    if (isLaterRound(body)) return { text: 'after the tools' };
    return responses[Number(found[1])] ?? { text: 'unknown case' };
  });
  const accepted: { i: number; session: string; replyTo: string }[] = [];
  await forEachLimit(responses, options.concurrency ?? 4, async (response, i) => {
    report.inputs++;
    const session = `${runTag}-${i}`;
    const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text: `tell me ${marker(i)}` }] });
    if (res.status !== 202) {
      report.failures.push({ problem: `ingress answered ${res.status}`, input: preview(response) });
      return;
    }
    report.status2xx++;
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    accepted.push({ i, session, replyTo });
  });

  const prisma = createPrismaClient(sys.db.url);
  try {
    const ended = new Map<string, { status: string; error: string | null }>();
    await waitUntil('every run to end', async () => {
      const rows = await prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId: { startsWith: `${runTag}-` }, status: { in: ['succeeded', 'failed'] } }, select: { launcherId: true, status: true, error: true } });
      for (const r of rows) ended.set(r.launcherId, { status: r.status, error: r.error });
      return accepted.every((a) => ended.has(a.session)) || deadService(fuzz) !== undefined;
    }, options.deadlineMs ?? 180_000, 500).catch(() => undefined);
    // The last parts go out after the query is recorded as ended.
    const replies = (replyTo: string) => sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo);
    const settled = (a: (typeof accepted)[number]) => {
      const parts = replies(a.replyTo);
      return parts.some((c) => c.json?.is_final === true) || parts.some((c) => JSON.stringify(c.json?.message ?? '').includes(FAILURE_HINT));
    };
    await waitUntil('the last parts', () => accepted.every((a) => !ended.has(a.session) || settled(a)), 30_000, 250).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const a of accepted) {
      const input = preview(responses[a.i]);
      const record = ended.get(a.session);
      if (!record) {
        report.failures.push({ problem: 'the run did not end', input });
        continue;
      }
      const parts = replies(a.replyTo);
      const finals = parts.filter((c) => c.json?.is_final === true).length;
      const hinted = parts.some((c) => JSON.stringify(c.json?.message ?? '').includes(FAILURE_HINT));
      const seen = parts.map((c) => `#${c.json?.sequence}${c.json?.is_final ? ' final' : ''}${c.json?.stream ? ' stream' : ''}: ${JSON.stringify(c.json?.message ?? null).slice(0, 80)}`).join(' | ');
      if (finals > 1) report.failures.push({ problem: `${finals} final callbacks`, input: `${input}\n      callbacks: ${seen}` });
      else if (finals === 0 && !(record.status === 'failed' && hinted)) report.failures.push({ problem: `query ${record.status} with neither a final reply nor the failure hint${record.error ? `: ${record.error.slice(0, 150)}` : ''}`, input });
    }
  } finally {
    await prisma.$disconnect();
  }
  const dead = deadService(fuzz);
  if (dead) report.failures.push({ problem: 'a service died', input: dead });
  return report;
}
