import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Redis } from 'ioredis';
import { SessionLeases } from '@conveyor/message-state';
import { REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';

/**
 * A session's next message starts only after the turn before it is in history (LangBot appends the
 * turn to the conversation before the session's lock is let go). The answer's final part reaches the
 * platform before the runner writes the turn; the session must stay taken until the run has ended.
 */
describe('the next message of a session', () => {
  let sys: TestSystem;
  let redis: Redis;
  let lock: pg.Client | undefined;

  before(async () => {
    sys = await startTestSystem();
    redis = new Redis(REDIS_URL);
  });

  after(async () => {
    await lock?.end().catch(() => undefined);
    redis?.disconnect();
    await sys?.stop();
  });

  test('sees the previous answer in its history even when the history write is slow', async () => {
    const session = uniqueName('hist');
    sys.llm.setDefault((body) => {
      const text = JSON.stringify(body.messages?.at(-1)?.content ?? '');
      return { text: text.includes('first question') ? 'first answer' : 'second answer' };
    });
    const post = async (text: string) => {
      const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text }] });
      assert.equal(res.status, 202);
      return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    };
    // History writes wait while this transaction holds the table; reads go on.
    lock = new pg.Client({ connectionString: sys.db.url });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE "ConversationMessage" IN EXCLUSIVE MODE');

    const first = await post('first question');
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === first && c.json.is_final === true), 60_000);
    const route = { botId: sys.botId, adapter: 'http-bot' as const, launcherType: 'person' as const, launcherId: session };
    const leases = new SessionLeases(redis, sys.prefix);
    // The first query's hold on the session once its final part went out (none, with the defect).
    const firstHolder = await leases.holder(route);
    const second = await post('second question');
    const secondQuestionAsked = () => sys.llm.requests.some((r) => JSON.stringify(r.body).includes('second question'));
    // Either the second message reaches the model now (the defect), or the first query keeps the
    // session: then the second can only start after the history write.
    await waitUntil('the second message reaching the model, or the first query holding the session', async () =>
      secondQuestionAsked() || (firstHolder !== null && (await leases.holder(route)) === firstHolder), 60_000);
    await lock.query('COMMIT');
    await lock.end();
    lock = undefined;

    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === second && c.json.is_final === true), 60_000);
    const request = sys.llm.requests.find((r) => JSON.stringify(r.body).includes('second question'));
    assert.ok(request, 'the model was asked the second question');
    assert.match(JSON.stringify(request.body), /first answer/, 'the second question\'s history holds the first answer');
  });
});
