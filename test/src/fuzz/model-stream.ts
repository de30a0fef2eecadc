import fc from 'fast-check';
import type { FakeResponse } from '../fakes/index.js';
import type { FuzzSystem } from './fuzz-system.js';
import { brokenJson, hostileText } from './arbitraries.js';
import { emptyReport, preview, type CategoryReport } from './report.js';
import { caseMarker, isLaterRound, judgeRuns, postRuns, shortEcho } from './runs.js';
import { uniqueName } from '../harness/ids.js';

const chunk = (delta: unknown, finish: unknown = null) =>
  JSON.stringify({ id: 'chatcmpl-fuzz', object: 'chat.completion.chunk', created: 1, model: 'fake-model', choices: [{ index: 0, delta, finish_reason: finish }] });

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

/**
 * Sends one message per generated model response; the fake model serves that response (a later tool
 * round gets a plain answer). Each run must end within the deadline with a final reply or a visible
 * failure hint, and the runner must keep running.
 */
export async function fuzzModelStreams(fuzz: FuzzSystem, responses: FakeResponse[], options: { concurrency?: number; deadlineMs?: number } = {}): Promise<CategoryReport> {
  const report = emptyReport('model-stream');
  const { sys } = fuzz;
  const runTag = uniqueName('m');
  const marker = caseMarker('mcase', runTag);
  sys.llm.setDefault((body) => {
    const i = marker.find(body);
    if (i === undefined) return shortEcho(body);
    if (isLaterRound(body)) return { text: 'after the tools' };
    return responses[i] ?? { text: 'unknown case' };
  });
  report.inputs = responses.length;
  const runs = await postRuns(fuzz, report, responses.map((response, i) => ({ session: `${runTag}-${i}`, text: `tell me ${marker.text(i)}`, input: preview(response) })), options.concurrency);
  report.status2xx = runs.length;
  await judgeRuns(fuzz, report, runs, `${runTag}-`, options.deadlineMs);
  return report;
}
