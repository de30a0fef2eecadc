import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { DeadLetter } from '@conveyor/contracts';
import { readDeadLetters } from '@conveyor/bus';
import { createPrismaClient } from '@conveyor/persistence';
import { startTestSystem, NATS_URL, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';

/**
 * One message through all four services over JetStream, against the real NATS, Redis and Postgres,
 * with the fake LLM and a fake HTTP-bot integrator.
 */
describe('a message end to end', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem({
      pipelineConfig: { ai: { 'local-agent': { prompt: [{ role: 'system', content: 'You are the e2e test bot.' }] } } },
    });
  });

  after(async () => {
    await sys?.stop();
  });

  test('a signed push gets 202, the model answers, the callback gets the reply, all in one trace', async () => {
    sys.llm.setDefault((body) => ({ text: `Hello from the model (${body.messages?.length} messages)` }));
    const res = await sys.post({ session_id: 'ticket-1', sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text: 'Export keeps failing' }] });
    assert.equal(res.status, 202);
    const accepted = (await res.json()) as { code: number; msg: string; data: { session_id: string; accepted_message_id: string; aggregating: boolean } };
    assert.equal(accepted.code, 0);
    assert.equal(accepted.msg, 'accepted');
    assert.equal(accepted.data.session_id, 'ticket-1');
    assert.match(accepted.data.accepted_message_id, /^in_[0-9a-f]{32}$/);

    const [callback] = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === accepted.data.accepted_message_id), 20_000)
      .then((all) => all.filter((c) => c.json?.reply_to === accepted.data.accepted_message_id));
    assert.equal(callback.signatureValid, true, 'callback is signed with the bot secret');
    assert.deepEqual(
      { ...callback.json, timestamp: undefined },
      {
        session_id: 'ticket-1',
        reply_to: accepted.data.accepted_message_id,
        sequence: 1,
        is_final: true,
        // The HTTP-bot adapter always streams, as LangBot's does: the reply is one final chunk.
        stream: true,
        message: [{ type: 'Plain', text: 'Hello from the model (2 messages)' }],
        timestamp: undefined,
      },
    );
    assert.match(callback.json.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$/);

    // The model saw the pipeline's system prompt, then the user's text.
    const request = sys.llm.requests.at(-1)!;
    assert.equal(request.headers.authorization, 'Bearer e2e-llm-key');
    // The preset gets the date paragraph for this turn only (PreProcessor's date grounding).
    assert.equal(request.body.messages?.length, 2);
    assert.match(String(request.body.messages![0].content), /^You are the e2e test bot\.\n\nCurrent date: /);
    assert.deepEqual(request.body.messages![1], { role: 'user', content: 'Export keeps failing' });

    // Every service's spans share one trace, linked parent to child across the processes.
    const hopNames = [sys.topology.streams.queries, sys.topology.streams.runs, sys.topology.streams.events].map((st) => `process ${st.subjects[0]}`);
    const spans = await sys.otlp.waitFor((all) => {
      const send = all.find((s) => s.name === 'http-bot send');
      if (!send) return false;
      const names = new Set(all.filter((s) => s.traceId === send.traceId).map((s) => s.name));
      return hopNames.every((n) => names.has(n));
    }, 20_000);
    const traceId = spans.find((s) => s.name === 'http-bot send')!.traceId;
    const trace = spans.filter((s) => s.traceId === traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const consumers = trace.filter((s) => s.kindName === 'CONSUMER');
    // Query, run request, then the runner's events (the reply and its `done`).
    assert.deepEqual([...new Set(consumers.map((s) => s.name))].sort(), [...hopNames].sort());
    assert.deepEqual(
      [...new Set(trace.map((s) => s.serviceName))].sort(),
      ['conveyor-dispatcher', 'conveyor-ingress', 'conveyor-orchestrator', 'conveyor-runner'],
    );
    for (const consumer of consumers) {
      const parent = byId.get(consumer.parentSpanId!);
      assert.equal(parent?.kindName, 'PRODUCER', `${consumer.name} is a child of its producer`);
      assert.notEqual(parent?.serviceName, consumer.serviceName, 'the hop crosses processes');
      assert.equal(consumer.attributes['messaging.system'], 'nats');
    }
    const llmSpan = trace.find((s) => s.attributes['gen_ai.request.model'] === 'fake-model');
    assert.equal(llmSpan?.serviceName, 'conveyor-runner');
    const root = trace.find((s) => !s.parentSpanId);
    assert.equal(root?.serviceName, 'conveyor-ingress');
    assert.equal(root?.kindName, 'SERVER');

    // The query log has the outcome and the trace id; the conversation kept both turns.
    const prisma = createPrismaClient(sys.db.url);
    try {
      const record = await waitUntil('query record succeeded', async () => {
        const rows = await prisma.queryRecord.findMany({ where: { botId: sys.botId, launcherId: 'ticket-1' } });
        return rows.length === 1 && rows[0].status === 'succeeded' ? rows[0] : undefined;
      });
      assert.equal(record.traceId, traceId);
      const messages = await prisma.conversationMessage.findMany({ orderBy: { seq: 'asc' } });
      assert.deepEqual(messages.map((m) => [m.role, m.content]), [
        ['user', 'Export keeps failing'],
        ['assistant', 'Hello from the model (2 messages)'],
      ]);
    } finally {
      await prisma.$disconnect();
    }
  });

  test('the next message of the session carries the history', async () => {
    sys.llm.setDefault({ text: 'Second answer' });
    const res = await sys.post({ session_id: 'ticket-1', message: [{ type: 'Plain', text: 'Still failing' }] });
    assert.equal(res.status, 202);
    const { data } = (await res.json()) as { data: { accepted_message_id: string } };
    await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id), 20_000);
    const roles = sys.llm.requests.at(-1)!.body.messages!.map((m) => `${m.role}:${m.content}`.replace(/\n\nCurrent date: [\s\S]*$/, ''));
    assert.deepEqual(roles, [
      'system:You are the e2e test bot.',
      'user:Export keeps failing',
      'assistant:Hello from the model (2 messages)',
      'user:Still failing',
    ]);
  });

  test('a model failure reaches the user as the failure hint and fails the query record', async () => {
    sys.llm.setDefault({ error: { status: 500, message: 'upstream exploded' } });
    const res = await sys.post({ session_id: 'ticket-fail', message: [{ type: 'Plain', text: 'hi' }] });
    const { data } = (await res.json()) as { data: { accepted_message_id: string } };
    const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id), 20_000);
    const callback = all.find((c) => c.json?.reply_to === data.accepted_message_id)!;
    assert.deepEqual(callback.json.message, [{ type: 'Plain', text: 'Request failed.' }]);
    assert.equal(callback.json.is_final, true);
    const prisma = createPrismaClient(sys.db.url);
    try {
      const record = await waitUntil('query record failed', async () => {
        const row = await prisma.queryRecord.findFirst({ where: { launcherId: 'ticket-fail' } });
        return row?.status === 'failed' ? row : undefined;
      });
      assert.match(record.error ?? '', /upstream exploded/);
    } finally {
      await prisma.$disconnect();
    }
  });

  test('bad input gets LangBot status codes and bodies', async () => {
    const body = { session_id: 's', message: [{ type: 'Plain', text: 'x' }] };
    const badSig = await sys.post(body, { secret: 'wrong-secret' });
    assert.equal(badSig.status, 401);
    assert.deepEqual(await badSig.json(), { code: 40101, msg: 'invalid signature: signature_mismatch', data: null });

    const badJson = await sys.post(null, { rawBody: '{"session_id": ' });
    assert.equal(badJson.status, 400);
    assert.deepEqual(await badJson.json(), { code: 40001, msg: 'body is not valid JSON', data: null });

    const big = await sys.post(null, { rawBody: Buffer.alloc(1_048_577, 0x20) });
    assert.equal(big.status, 413);
    assert.deepEqual(await big.json(), { code: 41301, msg: 'message too large', data: null });

    const missing = await sys.post({ session_id: 's' });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { code: 40001, msg: 'session_id and message are required', data: null });

    const unknownBot = await fetch(`${sys.services.get('ingress').url}/bots/00000000-0000-4000-8000-000000000000`, { method: 'POST', body: '{}' });
    assert.equal(unknownBot.status, 404);
    assert.deepEqual(await unknownBot.json(), { error: 'Bot not found' });

    const replayHeaders = { 'x-lb-idempotency-key': 'key-1' };
    assert.equal((await sys.post(body, { headers: replayHeaders })).status, 202);
    const replay = await sys.post(body, { headers: replayHeaders });
    assert.equal(replay.status, 409);
    assert.deepEqual(await replay.json(), { code: 40901, msg: 'idempotency key already accepted', data: null });
  });

  test('garbage on the query subject lands in the dead letters and the next message still works', async () => {
    const nc = await connect({ servers: NATS_URL });
    try {
      const js = jetstream(nc);
      const h = natsHeaders();
      await js.publish(sys.topology.subjects.query(sys.botId), 'this is not json', { msgID: 'garbage-1', headers: h });
      await js.publish(sys.topology.subjects.query(sys.botId), JSON.stringify({ v: 1, queryId: 'nope' }), { msgID: 'garbage-2' });

      const letters = await waitUntil('two dead letters', async () => {
        const found = await readDeadLetters(js, sys.topology.streams.deadLetters, sys.topology.subjects.deadLetter('orchestrator'));
        return found.length >= 2 ? found : undefined;
      }, 20_000, 200);
      for (const letter of letters) assert.ok(DeadLetter.safeParse(letter).success);
      assert.deepEqual(letters.map((l) => l.reason), ['invalid_payload', 'invalid_payload']);
      assert.equal(Buffer.from(letters[0].payloadBase64, 'base64').toString(), 'this is not json');
      assert.match(letters[1].error, /queryId/);
      assert.equal(letters[0].deliveryCount, 1);
    } finally {
      await nc.close();
    }

    sys.llm.setDefault({ text: 'still alive' });
    const res = await sys.post({ session_id: 'after-garbage', message: [{ type: 'Plain', text: 'ping' }] });
    assert.equal(res.status, 202);
    const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.session_id === 'after-garbage'), 20_000);
    assert.deepEqual(all.find((c) => c.json?.session_id === 'after-garbage')!.json.message, [{ type: 'Plain', text: 'still alive' }]);
  });
});
