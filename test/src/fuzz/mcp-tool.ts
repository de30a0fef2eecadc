import fc from 'fast-check';
import { jsonRpcResult, type RawMcpAnswer } from '../fakes/mcp-server.js';
import { FUZZ_TOOL, type FuzzSystem } from './fuzz-system.js';
import { anyTypedValue, brokenJson, deepPlaceholder, expandDeep, hostileText, nearMiss, smallJson } from './arbitraries.js';
import { emptyReport, preview, type CategoryReport } from './report.js';
import { caseMarker, isLaterRound, judgeRuns, postRuns, shortEcho } from './runs.js';
import { uniqueName } from '../harness/ids.js';

/** What the scripted MCP server answers a case's `tools/call` with; `"@@ID@@"` in the body stands for the request's id. */
export interface McpToolCase {
  /** How the answer was made, for the report. */
  kind: 'result' | 'error' | 'near' | 'wrong-id' | 'batch' | 'sse' | 'raw';
  answer: RawMcpAnswer;
  /** Tool calls the model makes in its first round (each gets the same answer). */
  calls: number;
}

const ID = '@@ID@@';

const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: hostileText(200) },
  { weight: 1, arbitrary: fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', 'x\udc00y', '\udbff\udfff', '\ufeff') },
  // Large results: the model gets them whole; history keeps them.
  { weight: 1, arbitrary: fc.integer({ min: 50_000, max: 1_200_000 }).map((n) => 'm'.repeat(n)) },
);

const base64ish = fc.oneof(fc.base64String({ maxLength: 40 }), hostileText(20), fc.integer({ min: 10_000, max: 400_000 }).map((n) => 'A'.repeat(n)));

/** One item of a result's `content`: every kind MCP knows, with odd values, and things of no kind. */
const contentItem: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: text.map((t) => ({ type: 'text', text: t })) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('text'), text: anyTypedValue }, { requiredKeys: ['type'] }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constantFrom('image', 'audio'), data: base64ish, mimeType: fc.oneof(fc.constantFrom('image/png', 'audio/wav', ''), hostileText(20)) }, { requiredKeys: ['type'] }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('resource_link'), uri: hostileText(), name: hostileText(), mimeType: hostileText(), description: hostileText() }, { requiredKeys: ['type'] }) },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant('resource'),
      resource: fc.record({ uri: hostileText(), mimeType: hostileText(), text, blob: fc.oneof(base64ish, anyTypedValue) }, { requiredKeys: [] }),
    }, { requiredKeys: ['type'] }),
  },
  { weight: 1, arbitrary: fc.record({ type: hostileText(12), extra: smallJson }) },
  { weight: 1, arbitrary: deepPlaceholder().map((meta) => ({ type: 'text', text: 'deep', _meta: meta })) },
  { weight: 1, arbitrary: anyTypedValue },
);

/** A `tools/call` result: mostly of the right shape, with isError, structured content, many parts, or nothing like it. */
const toolResult: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      content: fc.array(contentItem, { maxLength: 4 }),
      isError: fc.oneof({ weight: 3, arbitrary: fc.boolean() }, { weight: 1, arbitrary: anyTypedValue }),
      structuredContent: fc.oneof(smallJson, deepPlaceholder()),
    }, { requiredKeys: ['content'] }),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 5_000 }).map((n) => ({ content: Array.from({ length: n }, (_, k) => ({ type: 'text', text: `part ${k}` })) })) },
  { weight: 1, arbitrary: fc.record({ content: anyTypedValue, isError: fc.boolean(), structuredContent: smallJson }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: anyTypedValue },
);

const rpcError = fc.record({
  code: fc.oneof(fc.constantFrom(-32603, -32602, -32601, -32600, -32000, -32001, 0), anyTypedValue),
  message: fc.oneof({ weight: 3, arbitrary: hostileText(100) }, { weight: 1, arbitrary: anyTypedValue }),
  data: smallJson,
}, { requiredKeys: [] });

const response = toolResult.map((result) => ({ jsonrpc: '2.0', id: ID, result }));
const json = (value: unknown) => JSON.stringify(value) ?? 'null';

/** Lines a server might put in an event stream before (or instead of) its response. */
const sseNoise = fc.oneof(
  fc.constantFrom(
    ': ping\n\n',
    'data: not json\n\n',
    'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n',
    'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\n\n',
    'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}\n\n',
    'id: 7\nretry: 1\n\n',
    `data: {"jsonrpc":"2.0","id":"${ID}",\n\n`,
  ),
  hostileText(30).map((t) => `data: ${t}\n\n`),
);

const answers: fc.Arbitrary<Omit<McpToolCase, 'calls'>> = fc.oneof(
  { weight: 10, arbitrary: response.map((r) => ({ kind: 'result' as const, answer: { body: json(r) } })) },
  { weight: 2, arbitrary: rpcError.map((error) => ({ kind: 'error' as const, answer: { body: json({ jsonrpc: '2.0', id: ID, error }) } })) },
  // A response with one field (at any depth) removed or of another type: no id, an id of the wrong type, no result, …
  { weight: 3, arbitrary: nearMiss(fc.constant({ jsonrpc: '2.0', id: ID, result: { content: [{ type: 'text', text: 'ok' }] } })).map((r) => ({ kind: 'near' as const, answer: { body: json(r) } })) },
  // A well-formed answer to a request never made: the call is only given up at the call timeout.
  { weight: 1, arbitrary: fc.constantFrom('987654321', '"other"', '-1').map((id) => ({ kind: 'wrong-id' as const, answer: { body: `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"lost"}]}}` } })) },
  {
    weight: 1,
    arbitrary: fc.tuple(response, fc.constantFrom('twice', 'notification-first', 'empty')).map(([r, shape]) => ({
      kind: 'batch' as const,
      answer: { body: shape === 'empty' ? '[]' : shape === 'twice' ? `[${json(r)},${json(r)}]` : `[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}},${json(r)}]` },
    })),
  },
  {
    weight: 2,
    arbitrary: fc.record({ noise: fc.array(sseNoise, { maxLength: 3 }), reply: fc.option(fc.oneof(response, nearMiss(response)), { nil: undefined }), ending: fc.constantFrom<'end' | 'destroy'>('end', 'end', 'destroy') })
      .map(({ noise, reply, ending }) => ({ kind: 'sse' as const, answer: { contentType: 'text/event-stream', body: `${noise.join('')}${reply === undefined ? '' : `event: message\ndata: ${json(reply)}\n\n`}`, ending } })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      status: fc.constantFrom(200, 200, 200, 400, 404, 413, 500, 503),
      contentType: fc.constantFrom('application/json', 'text/event-stream', 'text/html', 'text/plain', '', 'application/json; charset=utf-16'),
      body: fc.oneof(
        brokenJson,
        fc.constantFrom('<html>Bad Gateway</html>', '{"jsonrpc":"2.0"}', 'null', '{}'),
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
        // A result whose text is not UTF-8.
        fc.constant(Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":"${ID}","result":{"content":[{"type":"text","text":"`), Buffer.from([0xff, 0xfe, 0xc0, 0xed, 0xa0, 0x80]), Buffer.from('"}]}}')])),
      ),
      ending: fc.constantFrom<'end' | 'destroy'>('end', 'end', 'destroy'),
    }).map((answer) => ({ kind: 'raw' as const, answer })),
  },
);

export const mcpToolCase: fc.Arbitrary<McpToolCase> = fc.tuple(answers, fc.constantFrom(1, 1, 1, 2)).map(([a, calls]) => ({ ...a, calls }));

/** The case's answer to the request with JSON-RPC id `id` (JSON text): the id placed, deep nesting expanded. */
function answerFor(c: McpToolCase, id: string): RawMcpAnswer {
  const { body } = c.answer;
  if (Buffer.isBuffer(body)) {
    const i = body.indexOf(`"${ID}"`);
    return { ...c.answer, body: i < 0 ? body : Buffer.concat([body.subarray(0, i), Buffer.from(id), body.subarray(i + ID.length + 2)]) };
  }
  return { ...c.answer, body: expandDeep(body.replaceAll(`"${ID}"`, id)) };
}

/**
 * One message per case: the fake model calls the scripted MCP tool, the tool answers as the case
 * says, the model answers after it. Whatever the tool returned, the run ends with exactly one final
 * reply (a tool's failure is an `err: …` for the model, not a failed run). Then each session gets a
 * second message, answered from a history that holds the tool's result, and the services still run.
 */
export async function fuzzMcpTools(fuzz: FuzzSystem, cases: McpToolCase[], options: { concurrency?: number; deadlineMs?: number } = {}): Promise<CategoryReport> {
  const report = emptyReport('mcp-tool');
  const { sys, mcp } = fuzz;
  const runTag = uniqueName('t');
  const marker = caseMarker('toolcase', runTag);
  /** Cases whose first model round found the tool missing from the offer. */
  const notOffered = new Set<number>();
  sys.llm.setDefault((body) => {
    const i = marker.find(body);
    if (i === undefined) return shortEcho(body);
    if (isLaterRound(body)) return { text: `after the tool, case ${i}` };
    const offered = Array.isArray(body.tools) && body.tools.some((t: { function?: { name?: string } }) => t.function?.name === FUZZ_TOOL);
    if (!offered) notOffered.add(i);
    return { toolCalls: Array.from({ length: cases[i]?.calls ?? 1 }, () => ({ name: FUZZ_TOOL, arguments: JSON.stringify({ case: `${runTag}:${i}` }) })) };
  });
  mcp.setCallResponder(({ id, arguments: args }) => {
    const named = typeof (args as { case?: unknown } | undefined)?.case === 'string' ? (args as { case: string }).case.split(':') : [];
    const c = named[0] === runTag ? cases[Number(named[1])] : undefined;
    return c ? answerFor(c, id) : { body: jsonRpcResult(id, '{"content":[{"type":"text","text":"no such case"}]}') };
  });
  const input = (i: number) => `${cases[i].kind} ×${cases[i].calls}: ${preview(cases[i].answer.body)}`;
  const deadlineMs = options.deadlineMs ?? 180_000 + 500 * cases.length;
  try {
    report.inputs = cases.length;
    const runs = await postRuns(fuzz, report, cases.map((_, i) => ({ session: `${runTag}-${i}`, text: `use the tool, ${marker.text(i)}`, input: input(i), mustAnswer: true })), options.concurrency);
    report.status2xx += runs.length;
    // A second message on each session, taken up once the first one's reply ended: the runner, its MCP
    // session and the session's history (now holding the tool's result) must serve it.
    const next = await postRuns(fuzz, report, runs.map((r) => ({ session: r.session, text: 'and now, without tools?', input: `the message after: ${r.input}`, mustAnswer: true })), options.concurrency);
    await judgeRuns(fuzz, report, [...runs, ...next], `${runTag}-`, deadlineMs);
    const called = new Set(mcp.calls.map((c) => (c.arguments as { case?: unknown } | undefined)?.case));
    for (const run of runs) {
      const i = Number(run.session.slice(runTag.length + 1));
      if (notOffered.has(i)) report.failures.push({ problem: 'the MCP tool was not offered to the model', input: run.input });
      else if (!called.has(`${runTag}:${i}`)) report.failures.push({ problem: 'the MCP server never got the call', input: run.input });
    }
  } finally {
    mcp.setCallResponder();
  }
  return report;
}
