import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { sample } from '../harness/metrics.js';
import type { ReceivedSpan } from '../fakes/index.js';

/** The model's API key as the harness configures it: it must reach the model and nothing else. */
const API_KEY = 'e2e-llm-key';
const CONTENT_ATTRIBUTES = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions'];

/**
 * The model call as an LLM observability backend (Langfuse, Phoenix) reads it: GenAI spans and
 * metrics by the OpenTelemetry semantic conventions, through a real run of the four services, the
 * message text only when the conventions' opt-in is set, the model's key never.
 */
describe('GenAI telemetry of a model call (semantic conventions, content opt-in)', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem({
      pipelineConfig: {
        ai: { 'local-agent': { prompt: [{ role: 'system', content: 'You are the telemetry test bot.' }] } },
        // Group messages answered without an @-mention, so a group session can name its sender.
        trigger: { 'group-respond-rules': { random: 1 } },
      },
      modelExtraArgs: { temperature: 0.3, max_tokens: 256, top_p: 0.8 },
    });
  });

  after(async () => {
    await sys?.stop();
  });

  /** Sends one message and returns the spans of its trace once the chat span and the send are in. */
  async function traced(sessionId: string, text: string, sender?: { group: true; id: string }): Promise<ReceivedSpan[]> {
    // A person session's sender is the session itself; a group session names its sender.
    const res = await sys.post({ session_id: sessionId, ...(sender ? { session_type: 'group', sender: { id: sender.id, name: 'Tess' } } : {}), message: [{ type: 'Plain', text }] });
    assert.equal(res.status, 202, await res.clone().text());
    const { data } = (await res.json()) as { data: { accepted_message_id: string } };
    await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id), 60_000);
    let trace: ReceivedSpan[] = [];
    await sys.otlp.waitFor((all) => {
      const agent = all.find((s) => s.name === 'invoke_agent local-agent' && s.attributes['session.id'] === `${sys.botId}:${sender ? 'group' : 'person'}_${sessionId}`);
      if (!agent) return false;
      trace = all.filter((s) => s.traceId === agent.traceId);
      return trace.some((s) => s.name === 'chat fake-model') && trace.some((s) => s.name === 'http-bot send');
    }, 60_000);
    return trace;
  }

  function assertNoSecret(spans: ReceivedSpan[]): void {
    assert.ok(spans.length > 0);
    for (const span of spans) assert.ok(!JSON.stringify(span).includes(API_KEY), `the model's API key in span ${span.name}`);
  }

  test('the chat span carries provider, server, request parameters, response, usage and who it served; no content by default', async () => {
    sys.llm.setDefault({ text: 'Sunny all week' });
    const trace = await traced('genai-1', 'weather canary-question-7731');
    const chat = trace.find((s) => s.name === 'chat fake-model')!;
    const agent = trace.find((s) => s.name === 'invoke_agent local-agent')!;
    const llmPort = Number(new URL(sys.llm.url).port);

    assert.equal(chat.kindName, 'CLIENT');
    assert.equal(chat.serviceName, 'conveyor-runner');
    assert.equal(chat.parentSpanId, agent.spanId, 'the model call runs inside the agent invocation');
    const a = chat.attributes;
    assert.equal(a['gen_ai.operation.name'], 'chat');
    // A loopback fake is no OpenAI: never reported as openai.
    assert.equal(a['gen_ai.provider.name'], 'openai_compatible');
    assert.equal(a['gen_ai.request.model'], 'fake-model');
    assert.equal(a['server.address'], '127.0.0.1');
    assert.equal(a['server.port'], llmPort);
    assert.equal(a['gen_ai.request.temperature'], 0.3);
    assert.equal(a['gen_ai.request.max_tokens'], 256);
    assert.equal(a['gen_ai.request.top_p'], 0.8);
    assert.match(String(a['gen_ai.response.id']), /^chatcmpl/);
    assert.equal(a['gen_ai.response.model'], 'fake-model');
    assert.deepEqual(a['gen_ai.response.finish_reasons'], ['stop']);
    assert.ok(Number(a['gen_ai.usage.input_tokens']) > 0 && Number(a['gen_ai.usage.output_tokens']) > 0, 'usage');
    assert.equal(a['session.id'], `${sys.botId}:person_genai-1`);
    assert.equal(a['user.id'], 'genai-1', 'a person session: the sender is the session');
    assert.match(String(a['gen_ai.conversation.id']), /^[0-9a-f-]{36}$/);
    assert.equal(a['conveyor.bot.id'], sys.botId);
    assert.equal(a['conveyor.pipeline.id'], 'default');
    // The deprecated and the misplaced attributes are gone; time to first chunk is an event (and a metric).
    assert.equal(a['gen_ai.system'], undefined);
    assert.equal(a['gen_ai.server.time_to_first_token'], undefined);
    const first = chat.events.find((e) => e.name === 'gen_ai.first_chunk');
    assert.ok(Number(first?.attributes['gen_ai.client.operation.time_to_first_chunk']) > 0, 'first chunk event');

    assert.equal(agent.kindName, 'INTERNAL');
    assert.equal(agent.attributes['gen_ai.operation.name'], 'invoke_agent');
    assert.equal(agent.attributes['gen_ai.agent.name'], 'local-agent');
    assert.equal(agent.attributes['gen_ai.provider.name'], 'openai_compatible');
    assert.equal(agent.attributes['session.id'], a['session.id']);

    for (const span of trace) {
      for (const key of CONTENT_ATTRIBUTES) assert.equal(span.attributes[key], undefined, `${key} on ${span.name} without the opt-in`);
      assert.ok(!JSON.stringify(span).includes('canary-question-7731'), `the message text in span ${span.name}`);
      assert.ok(!JSON.stringify(span).includes('Sunny all week'), `the answer in span ${span.name}`);
    }
    assertNoSecret(sys.otlp.spans);
  });

  test('a failed model call has error.type from the provider\'s status, on the span and the duration metric', async () => {
    sys.llm.setDefault({ error: { status: 503, message: 'overloaded' } });
    try {
      const trace = await traced('genai-fail', 'will fail');
      const chat = trace.find((s) => s.name === 'chat fake-model')!;
      assert.equal(chat.attributes['error.type'], '503');
      assert.equal(chat.status.code, 2, 'error status');
      const agent = trace.find((s) => s.name === 'invoke_agent local-agent')!;
      assert.ok(agent.attributes['error.type'], 'the agent invocation failed too');
      assert.equal(agent.status.code, 2);
    } finally {
      sys.llm.setDefault({ text: 'ok' });
    }
  });

  test('the runner exports gen_ai.client.* metrics with bot and pipeline', async () => {
    const labels = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai_compatible', gen_ai_request_model: 'fake-model', conveyor_bot_id: sys.botId, conveyor_pipeline_id: 'default' };
    const text = await waitUntil('runner GenAI metrics', async () => {
      const body = await (await fetch(`${sys.services.get('runner').url}/metrics`)).text();
      const failed = sample(body, 'gen_ai_client_operation_duration_count', { ...labels, error_type: '503' }) ?? 0;
      return failed >= 1 ? body : undefined;
    }, 60_000, 250);
    for (const type of ['input', 'output']) {
      assert.ok((sample(text, 'gen_ai_client_token_usage_sum', { ...labels, gen_ai_token_type: type, gen_ai_response_model: 'fake-model', server_address: '127.0.0.1' }) ?? 0) > 0, `${type} tokens`);
    }
    assert.ok((sample(text, 'gen_ai_client_operation_duration_count', { ...labels, gen_ai_response_model: 'fake-model' }) ?? 0) >= 1, 'successful call duration');
    assert.ok((sample(text, 'gen_ai_client_operation_time_to_first_chunk_count', labels) ?? 0) >= 1, 'time to first chunk of a streamed call');
    assert.equal(sample(text, 'conveyor_llm_tokens_total'), undefined, 'the old counter is gone');
    assert.ok(!text.includes(API_KEY));
  });

  test('with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true the prompt, the instructions and the answer are on the span; the key still is not', async () => {
    await sys.services.kill('runner', 'SIGTERM');
    await sys.services.start('runner', { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' });
    sys.llm.setDefault({ text: 'Captured answer' });
    const trace = await traced('genai-capture', 'capture canary-question-9902', { group: true, id: 'u-capture' });
    const chat = trace.find((s) => s.name === 'chat fake-model')!;

    const instructions = JSON.parse(String(chat.attributes['gen_ai.system_instructions'])) as { type: string; content: string }[];
    assert.equal(instructions[0].type, 'text');
    assert.match(instructions[0].content, /^You are the telemetry test bot\./);
    const input = JSON.parse(String(chat.attributes['gen_ai.input.messages'])) as { role: string; parts: { type: string; content?: string }[] }[];
    assert.deepEqual(input.at(-1), { role: 'user', parts: [{ type: 'text', content: 'capture canary-question-9902' }] });
    assert.ok(input.every((m) => m.role !== 'system'), 'system messages are instructions, not input messages');
    const output = JSON.parse(String(chat.attributes['gen_ai.output.messages'])) as unknown;
    assert.deepEqual(output, [{ role: 'assistant', parts: [{ type: 'text', content: 'Captured answer' }], finish_reason: 'stop' }]);
    assert.equal(chat.attributes['user.id'], 'u-capture');
    assert.equal(chat.attributes['session.id'], `${sys.botId}:group_genai-capture`);
    assertNoSecret(sys.otlp.spans);
  });
});
