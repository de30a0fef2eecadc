import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { provisionStreamsAs, startTestSystem, type TestSystem } from '../harness/system.js';
import { ALL_SERVICES, type ServiceName } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import type { ReceivedSpan } from '../fakes/index.js';
import { startSecuredNats, type SecuredNats } from '../deploy/nats-server.js';
import { sample } from '../harness/metrics.js';

/**
 * The operations view of one message, with every service connected to a NATS server that runs the
 * generated per-service permissions (so the permissions are proven sufficient end to end): one
 * trace across the four processes, Prometheus counters on every /metrics, trace ids in the logs.
 */
describe('operating a message: traces, metrics, logs (under NATS permissions)', () => {
  let sys: TestSystem;
  let nats: SecuredNats;

  before(async () => {
    sys = await startTestSystem({ startServices: false, serviceEnv: { LOG_LEVEL: 'debug' } });
    nats = await startSecuredNats(sys.prefix);
    await provisionStreamsAs(nats, sys.topology);
    for (const name of ALL_SERVICES) {
      await sys.services.start(name, { NATS_URL: nats.url, ...(await nats.credentialsEnv(name)) });
    }
  });

  after(async () => {
    await sys?.stop();
    await nats?.stop();
  });

  test('one message is one trace: ingress SERVER, PRODUCER/CONSUMER per hop, the LLM call, the send', async () => {
    sys.llm.setDefault({ text: 'Traced answer' });
    const res = await sys.post({ session_id: 'ops-1', sender: { id: 'u1', name: 'Ops' }, message: [{ type: 'Plain', text: 'trace me' }] });
    assert.equal(res.status, 202, await res.clone().text());
    const { data } = (await res.json()) as { data: { accepted_message_id: string } };
    await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id), 30_000);

    const { queries, runs, events } = sys.topology.streams;
    let trace: ReceivedSpan[] = [];
    await sys.otlp.waitFor((all) => {
      const send = all.find((s) => s.name === 'http-bot send');
      if (!send) return false;
      trace = all.filter((s) => s.traceId === send.traceId);
      const ids = new Set(trace.map((s) => s.spanId));
      // Complete when the root is there and no span misses its parent.
      return trace.some((s) => !s.parentSpanId) && trace.every((s) => !s.parentSpanId || ids.has(s.parentSpanId))
        && [queries, runs, events].every((st) => trace.some((s) => s.name === `process ${st.subjects[0]}`));
    }, 30_000);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const ancestors = (s: ReceivedSpan) => {
      const out: ReceivedSpan[] = [];
      for (let p = s.parentSpanId && byId.get(s.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId)) out.push(p);
      return out;
    };

    const roots = trace.filter((s) => !s.parentSpanId);
    assert.equal(roots.length, 1, 'one root');
    assert.equal(roots[0].serviceName, 'conveyor-ingress');
    assert.equal(roots[0].kindName, 'SERVER');

    // Each hop: the producer in the sending service, the consumer (its child) in the receiving one.
    const hops: [typeof queries, ServiceName, ServiceName][] = [[queries, 'ingress', 'orchestrator'], [runs, 'orchestrator', 'runner'], [events, 'runner', 'dispatcher']];
    for (const [stream, from, to] of hops) {
      // The messaging conventions' `{operation} {destination}`, the destination the subject pattern.
      const producer = trace.find((s) => s.name === `send ${stream.subjects[0]}` && s.kindName === 'PRODUCER');
      assert.equal(producer?.serviceName, `conveyor-${from}`, `send ${stream.subjects[0]} in ${from}`);
      assert.equal(producer?.attributes['messaging.operation.type'], 'send');
      assert.equal(producer?.attributes['messaging.system'], 'nats');
      assert.equal(producer?.attributes['messaging.nats.stream.name'], stream.name);
      const consumer = trace.find((s) => s.name === `process ${stream.subjects[0]}` && s.parentSpanId === producer!.spanId);
      assert.equal(consumer?.kindName, 'CONSUMER');
      assert.equal(consumer?.serviceName, `conveyor-${to}`);
      assert.equal(consumer?.attributes['messaging.operation.type'], 'process');
      assert.equal(consumer?.attributes['messaging.destination.name'], producer?.attributes['messaging.destination.name']);
      assert.equal(typeof consumer?.attributes['messaging.consumer.group.name'], 'string');
      assert.equal(consumer?.attributes['messaging.nats.message.delivery_count'], 1);
      assert.ok(ancestors(producer!).includes(roots[0]), `${stream.name} hop descends from the ingress request`);
    }

    const llm = trace.find((s) => s.attributes['gen_ai.request.model'] === 'fake-model');
    assert.equal(llm?.serviceName, 'conveyor-runner');
    assert.equal(llm?.kindName, 'CLIENT');
    assert.ok(ancestors(llm!).some((a) => a.name === `process ${runs.subjects[0]}`), 'the LLM call runs inside the run consumer span');
    // The model's HTTP request is a CLIENT span under the LLM call, and the model gets its context.
    const modelRequest = sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes('trace me'))!;
    const [, modelTraceId, modelParentId] = String(modelRequest.headers.traceparent ?? '').split('-');
    assert.equal(modelTraceId, llm!.traceId, 'the model request carries the trace');
    const modelPost = (await sys.otlp.waitFor((all) => all.some((s) => s.spanId === modelParentId), 30_000)).find((s) => s.spanId === modelParentId)!;
    assert.equal(modelPost.kindName, 'CLIENT');
    assert.equal(modelPost.serviceName, 'conveyor-runner');
    assert.equal(modelPost.parentSpanId, llm!.spanId, 'the model request runs inside the LLM call span');

    const send = trace.find((s) => s.name === 'http-bot send')!;
    assert.equal(send.serviceName, 'conveyor-dispatcher');
    assert.ok(ancestors(send).some((a) => a.name === `process ${events.subjects[0]}`), 'the send runs inside the event consumer span');
    // The callback request itself is a CLIENT span under the send, and the receiver gets its context.
    const callback = sys.callbacks.received.find((c) => c.json?.reply_to === data.accepted_message_id)!;
    const [, callbackTraceId, callbackParentId] = String(callback.headers.traceparent ?? '').split('-');
    assert.equal(callbackTraceId, send.traceId, 'the callback carries the trace');
    const post = (await sys.otlp.waitFor((all) => all.some((s) => s.spanId === callbackParentId), 30_000)).find((s) => s.spanId === callbackParentId)!;
    assert.equal(post.kindName, 'CLIENT');
    assert.equal(post.parentSpanId, send.spanId, 'the callback request runs inside the send span');

    // Pipeline stages sit under a consumer span and carry their result: the pre-stages in the
    // orchestrator, the stages after MessageProcessor in the dispatcher.
    const stageSpans = trace.filter((s) => s.name.startsWith('stage '));
    assert.equal(stageSpans.find((s) => s.name === 'stage PreProcessor')?.serviceName, 'conveyor-orchestrator');
    assert.equal(stageSpans.find((s) => s.name === 'stage SendResponseBackStage')?.serviceName, 'conveyor-dispatcher');
    for (const stage of stageSpans) {
      assert.ok(['CONTINUE', 'INTERRUPT'].includes(String(stage.attributes['conveyor.stage.result'])), `${stage.name} result`);
      assert.ok(stage.attributes['conveyor.pipeline.id'], `${stage.name} pipeline id`);
      assert.ok(ancestors(stage).some((a) => a.kindName === 'CONSUMER'), `${stage.name} is inside a consumer span`);
    }

    // Resource attributes: name per service, version from its package.json.
    for (const name of ALL_SERVICES) {
      const span = trace.find((s) => s.serviceName === `conveyor-${name}`)!;
      assert.equal(span.resourceAttributes['service.version'], '0.1.0');
      assert.equal(span.resourceAttributes['service.namespace'], 'conveyor');
    }

    // Logs: the lines written while handling the message carry its trace id and a span id.
    const traceId = roots[0].traceId;
    for (const name of ['orchestrator', 'runner', 'dispatcher'] as const) {
      const lines = sys.services.get(name).logs.filter((l) => l.includes(traceId)).map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.ok(lines.length > 0, `${name} logged something with trace ${traceId}:\n${sys.services.get(name).logs.slice(-10).join('\n')}`);
      for (const line of lines) {
        assert.equal(line.trace_id, traceId);
        assert.match(String(line.span_id), /^[0-9a-f]{16}$/);
      }
    }
  });

  test('every service answers /metrics and counted the message', async () => {
    const { queries, runs, events } = sys.topology.streams;
    const { orchestrator, runner, dispatcher } = sys.topology.consumers;
    const scrape = async (name: ServiceName) => {
      const res = await fetch(`${sys.services.get(name).url}/metrics`);
      assert.equal(res.status, 200);
      return res.text();
    };
    // Counters are exported on scrape; the last acks may trail the callback by a moment, and the
    // server applies an ack (plain, not confirmed) a moment after the counter counted it.
    const m = await waitUntil('all counters, and the consumers drained', async () => {
      const got = Object.fromEntries(await Promise.all(ALL_SERVICES.map(async (n) => [n, await scrape(n)] as const))) as Record<ServiceName, string>;
      // One event per short reply: the answer, which is the run's last event.
      const acked = (sample(got.dispatcher, 'conveyor_bus_messages_consumed_total', { consumer: dispatcher.durable, outcome: 'acked' }) ?? 0) >= 1;
      const drained = sample(got.runner, 'conveyor_consumer_pending_messages', { consumer: runner.durable }) === 0
        && sample(got.runner, 'conveyor_consumer_in_flight', { consumer: runner.durable }) === 0
        && sample(got.dispatcher, 'conveyor_consumer_ack_pending_messages', { consumer: dispatcher.durable }) === 0;
      return acked && drained ? got : undefined;
    }, 60_000, 250);

    assert.ok((sample(m.ingress, 'conveyor_ingress_messages_total', { bot: sys.botId, outcome: 'accepted' }) ?? 0) >= 1, 'ingress counted the inbound message');
    assert.ok((sample(m.ingress, 'conveyor_bus_messages_published_total', { stream: queries.name, outcome: 'stored' }) ?? 0) >= 1, 'ingress: message out');
    assert.ok((sample(m.orchestrator, 'conveyor_bus_messages_consumed_total', { consumer: orchestrator.durable, outcome: 'acked' }) ?? 0) >= 1, 'orchestrator: message in');
    assert.ok((sample(m.orchestrator, 'conveyor_bus_messages_published_total', { stream: runs.name, outcome: 'stored' }) ?? 0) >= 1, 'orchestrator: message out');
    assert.ok((sample(m.runner, 'conveyor_bus_messages_consumed_total', { consumer: runner.durable, outcome: 'acked' }) ?? 0) >= 1, 'runner: message in');
    assert.ok((sample(m.runner, 'conveyor_bus_messages_published_total', { stream: events.name, outcome: 'stored' }) ?? 0) >= 1, 'runner: the reply (its last event) out');
    assert.ok((sample(m.runner, 'conveyor_bus_handler_duration_seconds_count', { consumer: runner.durable }) ?? 0) >= 1, 'runner: handler latency histogram');
    assert.ok((sample(m.runner, 'gen_ai_client_token_usage_sum', { conveyor_model_id: 'fake', gen_ai_token_type: 'output', conveyor_bot_id: sys.botId }) ?? 0) > 0, 'runner: tokens');
    // Lag and in-flight gauges, read from the server at scrape time.
    assert.equal(sample(m.runner, 'conveyor_consumer_pending_messages', { consumer: runner.durable }), 0, 'runner: consumer lag');
    assert.equal(sample(m.runner, 'conveyor_consumer_in_flight', { consumer: runner.durable }), 0, 'runner: in flight');
    assert.equal(sample(m.dispatcher, 'conveyor_consumer_ack_pending_messages', { consumer: dispatcher.durable }), 0);
    assert.equal(sample(m.ingress, 'conveyor_bus_dead_letters_total'), undefined, 'no dead letters');
  });
});
