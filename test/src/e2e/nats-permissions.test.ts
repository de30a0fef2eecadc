import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connectBus } from '@conveyor/bus';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';
import type { SecuredNats } from '../deploy/nats-server.js';
import { replyText } from './runner-support.js';

/** Lines in which nats-server reports a refused publish or subscription. */
const VIOLATION = /Violation/i;

/**
 * The four services, each connected as its own user to a nats-server running the generated
 * per-service permissions (the config docker-compose and k8s ship), with every feature whose
 * messages cross NATS: stream and consumer provisioning, a reply by callback, a `/sync` reply over
 * core NATS request/reply, the web chat's event stream over core NATS, and a run JetStream gave up on,
 * answered from its MAX_DELIVERIES advisory. A permission missing for any of them shows up as a
 * violation in the server's log (and mostly as a feature that silently falls back or never answers).
 */
describe('the whole system under the generated NATS permissions', () => {
  let sys: TestSystem;
  let nats: SecuredNats;
  let ops: NatsConnection;
  let opsJsm: JetStreamManager;
  const hint = 'Sorry, given up (permissions e2e).';
  const webChatToken = uniqueName('webchat-token-');

  before(async () => {
    sys = await startTestSystem({
      natsPermissions: true,
      pipelineConfig: { output: { misc: { 'failure-hint': hint } } },
      // A short ack wait so a run nobody acks is delivered again within seconds (production: 60 s).
      // Short holds for a message waiting for its session, so that it is published again within seconds.
      // The web chat is off unless switched on, and then wants its token on every call.
      serviceEnv: { RUNNER_ACK_WAIT_MS: '2000', SESSION_WAIT_HOLD_MS: '300', WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken },
    });
    assert.ok(sys.securedNats);
    nats = sys.securedNats;
    // The operator's user, as an operator would look at the broker.
    ops = await connectBus({ url: nats.url, name: 'e2e-ops', env: await nats.credentialsEnv('ops') });
    opsJsm = await jetstreamManager(ops);
  });

  after(async () => {
    await ops?.close().catch(() => undefined);
    await sys?.stop();
  });

  const violations = (sinceLine = 0) => nats.logs.slice(sinceLine).filter((l) => VIOLATION.test(l));
  let testStartLine = 0;
  beforeEach(() => {
    testStartLine = nats.logs.length;
  });
  /** This test's violations (the last test looks at all of them). */
  const newViolations = () => violations(testStartLine);
  const serviceViolations = () => sys.services.allLogs().split('\n').filter((l) => /Permissions? Violation/i.test(l));

  test('the services provision every stream and consumer at start', async () => {
    for (const spec of Object.values(sys.topology.streams)) {
      const info = await opsJsm.streams.info(spec.name);
      assert.deepEqual(info.config.subjects, spec.subjects, `${spec.name} subjects`);
    }
    for (const spec of Object.values(sys.topology.consumers)) {
      const info = await waitUntil(`consumer ${spec.durable}`, () => opsJsm.consumers.info(spec.stream, spec.durable), 30_000);
      assert.equal(info.config.filter_subject, spec.filterSubject, `${spec.durable} filter`);
    }
    // Everything so far happened at start (subscriptions included).
    assert.deepEqual(violations(), []);
  });

  test('an HTTP-bot message is answered by callback', async () => {
    sys.llm.setDefault({ text: 'Answered by callback' });
    const res = await sys.post({ session_id: `cb-${randomUUID()}`, sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text: 'hello' }] });
    assert.equal(res.status, 202, await res.clone().text());
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === replyTo && c.json.is_final === true), 30_000);
    const final = all.find((c) => c.json?.reply_to === replyTo && c.json.is_final === true);
    assert.ok(final);
    assert.equal(replyText(final), 'Answered by callback');
    assert.deepEqual(newViolations(), []);
  });

  test('/sync is answered in the HTTP response with the reply text, not by callback', async () => {
    sys.llm.setDefault({ text: 'Answered synchronously' });
    const session = `sync-${randomUUID()}`;
    const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text: 'hi' }] }, { subPath: 'sync' });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { code: number; data: { session_id: string; message: { text?: string }[] } };
    assert.equal(body.code, 0);
    assert.equal(body.data.session_id, session);
    assert.equal(body.data.message.at(-1)?.text, 'Answered synchronously', JSON.stringify(body));
    assert.equal(sys.callbacks.received.filter((c) => c.json?.session_id === session).length, 0, 'diverted to the waiting call, not called back');
    assert.deepEqual(newViolations(), []);
  });

  test('the web chat event stream receives the reply', async () => {
    sys.llm.setDefault({ text: 'Answered in the web chat' });
    const ingress = sys.services.get('ingress').url;
    const sessionKey = `wc-${randomUUID()}`;
    const chat = `${ingress}/chat/api/bots/${sys.botId}/session`;
    const abort = new AbortController();
    try {
      const authorization = `Bearer ${webChatToken}`;
      const stream = await fetch(`${chat}/events`, { headers: { authorization, 'x-chat-session-key': sessionKey }, signal: abort.signal });
      assert.equal(stream.status, 200);
      assert.ok(stream.body);
      const reader = stream.body.getReader();
      const decoder = new TextDecoder();
      let received = '';
      // The ingress writes this after subscribing to the session's subject.
      const readUntil = async (what: string, done: () => boolean) => {
        const deadline = setTimeout(() => abort.abort(new Error(`timed out waiting for ${what}; got: ${received}`)), 30_000);
        try {
          while (!done()) {
            const { value, done: ended } = await reader.read();
            if (ended) throw new Error(`event stream ended before ${what}; got: ${received}`);
            received += decoder.decode(value, { stream: true });
          }
        } finally {
          clearTimeout(deadline);
        }
      };
      await readUntil('the connected comment', () => received.includes(': connected'));
      const res = await fetch(`${chat}/messages`, { method: 'POST', headers: { 'content-type': 'application/json', authorization, 'x-chat-session-key': sessionKey }, body: JSON.stringify({ text: 'hello web chat' }) });
      assert.equal(res.status, 202, await res.clone().text());
      const finalPart = () => received.split('\n\n').some((e) => e.startsWith('event: part') && e.includes('"isFinal":true'));
      await readUntil('the final part', finalPart);
      const parts = received.split('\n\n').filter((e) => e.startsWith('event: part')).map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as { text: string; isFinal: boolean });
      assert.equal(parts.find((p) => p.isFinal)?.text, 'Answered in the web chat');
    } finally {
      abort.abort();
    }
    assert.deepEqual(newViolations(), []);
  });

  test('a message waiting for its session is published to the queries again and answered in order', async () => {
    const session = `wait-${randomUUID()}`;
    sys.llm.setDefault((body) => {
      const text = JSON.stringify(body.messages?.at(-1)?.content ?? '');
      // Longer than all the waiting message's holds (SESSION_WAIT_HOLD_MS) together.
      return text.includes('slow question') ? { text: 'slow answer', delayFirstTokenMs: 6_000 } : { text: 'quick answer' };
    });
    const post = async (text: string) => {
      const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202, await res.clone().text());
      return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    };
    const first = await post('slow question');
    const second = await post('next question');
    const finals = await sys.callbacks.waitFor((all) => [first, second].every((id) => all.some((c) => c.json?.reply_to === id && c.json.is_final === true)), 90_000);
    const finalOf = (id: string) => finals.find((c) => c.json?.reply_to === id && c.json.is_final === true);
    assert.equal(replyText(finalOf(first)!), 'slow answer');
    assert.equal(replyText(finalOf(second)!), 'quick answer');
    assert.ok(sys.services.get('orchestrator').logs.some((l) => l.includes('published again to keep its deliveries')), 'the waiting message was published again');
    assert.deepEqual(newViolations(), []);
  });

  test('each consumer puts what it cannot read into its own dead letters', async () => {
    const js = jetstream(ops);
    const botId = randomUUID();
    const { subjects, streams } = sys.topology;
    const deadLettersOf = async () => (await opsJsm.streams.info(streams.deadLetters.name, { subjects_filter: subjects.allDeadLetters })).state.subjects ?? {};
    const before = await deadLettersOf();
    const unreadable = JSON.stringify({ v: 1, unreadable: true });
    await js.publish(subjects.query(botId), unreadable, { msgID: `bad-query-${botId}` });
    await js.publish(subjects.run(botId), unreadable, { msgID: `bad-run-${botId}` });
    await js.publish(subjects.event(botId), unreadable, { msgID: `bad-event-${botId}` });
    const roles = ['orchestrator', 'runner', 'dispatcher'] as const;
    await waitUntil('a dead letter from each consumer', async () => {
      const now = await deadLettersOf();
      return roles.every((role) => (now[subjects.deadLetter(role)] ?? 0) > (before[subjects.deadLetter(role)] ?? 0));
    }, 30_000);
    assert.deepEqual(newViolations(), []);
  });

  test('a run whose deliveries are exhausted is answered from its MAX_DELIVERIES advisory', async () => {
    // No runner: the run waits in its stream for the deliveries below.
    await sys.services.kill('runner', 'SIGTERM');
    const res = await sys.post({ session_id: `maxdeliver-${randomUUID()}`, message: [{ type: 'Plain', text: 'given up on' }] });
    assert.equal(res.status, 202, await res.clone().text());
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    const runs = sys.topology.streams.runs.name;
    const advisories = sys.topology.streams.runAdvisories.name;
    await waitUntil('the run is in its stream', async () => (await opsJsm.streams.info(runs)).state.messages === 1, 30_000);

    // Deliveries nobody acks, as runners that die holding the run leave them: after max_deliver of
    // them the server gives up and publishes the advisory, which its stream keeps.
    const consumer = await jetstream(ops).consumers.get(runs, sys.topology.consumers.runner.durable);
    let deliveries = 0;
    await waitUntil('the MAX_DELIVERIES advisory is stored', async () => {
      if ((await opsJsm.streams.info(advisories)).state.messages > 0) return true;
      // An open pull is what makes the server look at the expired delivery again.
      const msg = await consumer.next({ expires: 3_000 });
      if (msg) deliveries = msg.info.deliveryCount;
      return false;
    }, 90_000, 10);
    assert.equal(deliveries, sys.topology.consumers.runner.maxDeliver);

    await sys.services.start('runner');
    const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === replyTo && c.json.is_final === true), 60_000);
    const mine: ReceivedCallback[] = all.filter((c) => c.json?.reply_to === replyTo);
    assert.equal(mine.length, 1, 'one final part, nothing before it');
    assert.equal(replyText(mine[0]), hint);
    await waitUntil('the run is removed from its stream', async () => (await opsJsm.streams.info(runs)).state.messages === 0, 30_000);
    await waitUntil('the advisory is consumed', async () => (await opsJsm.streams.info(advisories)).state.messages === 0, 30_000);
    assert.deepEqual(newViolations(), []);
  });

  test('neither the server nor any service saw a permissions violation', () => {
    assert.deepEqual(violations(), [], 'nats-server log');
    assert.deepEqual(serviceViolations(), [], 'service logs');
  });
});
