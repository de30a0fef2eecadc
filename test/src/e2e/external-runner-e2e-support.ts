import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { addHttpBotPipeline, NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import type { FakeKeyedExternal } from '../fakes/external-runner-apis.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';
import { replyText } from './runner-support.js';

/** What the external runners' fakes answer: 18 words, so a streamed reply has several parts. */
export const answer = Array.from({ length: 18 }, (_, i) => `part${i + 1}`).join(' ');

/** Sends one HTTP-bot message and returns its callbacks once the final one arrived, in sequence order. */
export async function send(sys: TestSystem, sessionId: string, text: string): Promise<ReceivedCallback[]> {
  const res = await sys.post({ session_id: sessionId, sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text }] });
  assert.equal(res.status, 202);
  const { data } = (await res.json()) as { data: { accepted_message_id: string } };
  const mine = (all: ReceivedCallback[]) => all.filter((c) => c.json?.reply_to === data.accepted_message_id);
  await sys.callbacks.waitFor((all) => mine(all).some((c) => c.json.is_final === true), 30_000)
    .catch((err: Error) => assert.fail(`${err.message}\n${sys.services.allLogs().slice(-4000)}`));
  // Late parts would show up after the final one if the stream were not closed properly: the parts
  // are read once the dispatcher has sent every event it was given.
  await eventsDispatched(sys);
  return mine(sys.callbacks.received).sort((a, b) => a.json.sequence - b.json.sequence);
}

/** The dispatcher's consumer has nothing left to send or to acknowledge (the final part of the reply arrived). */
async function eventsDispatched(sys: TestSystem): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    const { stream, durable } = sys.topology.consumers.dispatcher;
    await waitUntil('the dispatcher sent every event', async () => {
      const info = await jsm.consumers.info(stream, durable);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    }, 30_000);
  } finally {
    await nc.close();
  }
}

export function assertStreamedAnswer(parts: ReceivedCallback[], expected: string): void {
  assert.ok(parts.length >= 1);
  assert.ok(parts.every((c) => c.json.stream === true && c.signatureValid), 'signed stream parts');
  assert.equal(parts.filter((c) => c.json.is_final === true).length, 1, 'exactly one final part');
  assert.equal(parts.at(-1)!.json.is_final, true, 'the final part is the last one');
  assert.equal(replyText(parts.at(-1)!), expected);
  // Cumulative snapshots: every part is a prefix of the answer.
  for (const p of parts) assert.ok(expected.startsWith(replyText(p)), `part is a prefix: ${replyText(p)}`);
}

/** The session's query record once the run wrote its end, with the tokens the service reported. */
export async function assertRecordedTokens(sys: TestSystem, sessionId: string, expected: { inputTokens: number; outputTokens: number }): Promise<void> {
  const prisma = createPrismaClient(sys.db.url);
  try {
    const record = await waitUntil('the run\'s usage on the query record', async () => {
      const row = await prisma.queryRecord.findFirst({ where: { launcherId: sessionId }, orderBy: { receivedAt: 'asc' } });
      return row?.status === 'succeeded' && row.inputTokens !== null ? row : undefined;
    });
    assert.deepEqual({ inputTokens: record.inputTokens, outputTokens: record.outputTokens }, expected);
    assert.equal(record.cost, null, 'no prices for the service\'s models');
  } finally {
    await prisma.$disconnect();
  }
}

/** The operator revokes the key the pipeline holds: the user gets the failure hint as the one final part, the query fails with the reason. */
export async function assertRefusedKeyFails(sys: TestSystem, fake: FakeKeyedExternal, sessionId: string, reason: RegExp): Promise<void> {
  const key = fake.apiKey;
  fake.apiKey = 'revoked-by-the-operator';
  try {
    const parts = await send(sys, sessionId, 'are you there');
    assert.equal(parts.filter((c) => c.json.is_final === true).length, 1, 'exactly one final part');
    assert.equal(replyText(parts.at(-1)!), 'Request failed.');
    const prisma = createPrismaClient(sys.db.url);
    try {
      const record = await waitUntil('query record failed', async () => {
        const row = await prisma.queryRecord.findFirst({ where: { launcherId: sessionId } });
        return row?.status === 'failed' ? row : undefined;
      });
      assert.match(String(record.error), reason);
      assert.ok(!String(record.error).includes(key), 'the key is not in the error');
    } finally {
      await prisma.$disconnect();
    }
  } finally {
    fake.apiKey = key;
  }
}

/**
 * One system for the external runners' suites (`body` declares them): each runner gets an HTTP bot
 * and a pipeline of its own in it, so a runner costs its tests and not a system's start-up.
 */
export function describeOnOneSystem(title: string, body: (system: () => TestSystem) => void): void {
  describe(title, () => {
    let sys: TestSystem;
    before(async () => {
      sys = await startTestSystem();
    });
    after(async () => {
      await sys?.stop();
    });
    body(() => sys);
  });
}

/**
 * What every external runner must do through the whole system (`system`, see describeOnOneSystem): stream the remote answer with exactly
 * one final part, keep the remote conversation per session (`conversationOf` reads the id the runner
 * sent from a recorded request), and turn a refused key into the pipeline's failure notice.
 */
export function describeRunner(system: () => TestSystem, name: string, o: {
  start(): Promise<FakeKeyedExternal>;
  pipeline(fake: FakeKeyedExternal): Record<string, unknown>;
  /** The remote conversation id a request carried (Langflow's caller-chosen session id is always there). */
  conversationOf(body: any, path: string): string | undefined;
  /** The id the fake gave the first conversation. */
  firstConversation(fake: FakeKeyedExternal): string;
  queryOf(body: any): string;
  authError: RegExp;
  /** Cases of the runner's own, run against the same system and fake (so they add no start-up). */
  moreTests?(ctx: () => { sys: TestSystem; fake: FakeKeyedExternal }): void;
}) {
  describe(`${name} through the broker`, () => {
    let sys: TestSystem;
    let fake: FakeKeyedExternal;

    before(async () => {
      fake = await o.start();
      sys = await addHttpBotPipeline(system(), { ai: { runner: { runner: name }, [name]: o.pipeline(fake) } });
    });

    after(async () => {
      await fake?.close();
    });

    test('the answer streams with one final part, and the session keeps its remote conversation', async () => {
      const first = await send(sys, `${name}-session`, 'hello remote');
      assertStreamedAnswer(first, answer);
      assert.ok(first.length >= 2, `the answer arrived in several parts (${first.length})`);
      assert.equal(fake.requests.length, 1);
      assert.equal(o.queryOf(fake.requests[0].body), 'hello remote');
      const opened = o.conversationOf(fake.requests[0].body, fake.requests[0].path);
      assert.ok(opened === undefined || opened === o.firstConversation(fake), 'a new session starts a new remote conversation');
      assert.equal(sys.llm.requests.length, 0, 'the local model is not used');

      const second = await send(sys, `${name}-session`, 'and again');
      assertStreamedAnswer(second, answer);
      assert.equal(fake.requests.length, 2);
      assert.equal(o.queryOf(fake.requests[1].body), 'and again');
      assert.equal(o.conversationOf(fake.requests[1].body, fake.requests[1].path), o.firstConversation(fake), 'the remote conversation is reused');

      await send(sys, `${name}-other-session`, 'hi from elsewhere');
      assert.notEqual(o.conversationOf(fake.requests[2].body, fake.requests[2].path), o.firstConversation(fake), 'another session has its own');

      // Each call is a CLIENT span in the message's trace, with the remote HTTP call under it.
      const spans = await sys.otlp.waitFor((all) => all.filter((s) => s.name === `invoke_agent ${name}`).length >= 3, 30_000);
      const calls = spans.filter((s) => s.name === `invoke_agent ${name}`);
      assert.ok(calls.every((s) => s.kindName === 'CLIENT' && s.serviceName === 'conveyor-runner' && s.attributes['gen_ai.agent.name'] === name));
      assert.deepEqual(calls.map((s) => s.attributes['conveyor.external.conversation_continued']).sort(), [false, false, true]);
      // By the GenAI conventions: the provider, where it is (the fake's loopback address), and whom the run serves.
      const fakeUrl = new URL(fake.url);
      for (const call of calls) {
        assert.equal(typeof call.attributes['gen_ai.provider.name'], 'string');
        assert.equal(call.attributes['server.address'], fakeUrl.hostname);
        assert.equal(call.attributes['server.port'], Number(fakeUrl.port));
        assert.match(String(call.attributes['session.id']), new RegExp(`^${sys.botId}:person_`));
        assert.equal(typeof call.attributes['gen_ai.conversation.id'], 'string');
        assert.equal(call.attributes['conveyor.bot.id'], sys.botId);
      }
      for (const call of calls) assert.ok(spans.some((s) => s.parentSpanId === call.spanId && s.kindName === 'CLIENT' && s.name.startsWith('POST')), 'the HTTP call is its child');
    });

    test('a refused key ends the reply with the failure notice and fails the query', () => assertRefusedKeyFails(sys, fake, `${name}-auth-session`, o.authError));

    o.moreTests?.(() => ({ sys, fake }));
  });
}

