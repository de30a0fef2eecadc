import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrismaClient } from '@conveyor/persistence';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';

/**
 * A model's answer can hold what Postgres cannot store (NUL, a lone surrogate). The user gets it as
 * sent; history keeps it made storable, so the next turn still sees the previous one.
 */
describe('a model answer with NUL and a lone surrogate', () => {
  let sys: TestSystem;

  before(async () => {
    sys = await startTestSystem();
  });

  after(async () => {
    await sys?.stop();
  });

  /** Sends a message on the session and waits for its final callback. */
  async function ask(session: string, text: string): Promise<void> {
    const res = await sys.post({ session_id: session, message: [{ type: 'Plain', text }] });
    assert.equal(res.status, 202);
    const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === replyTo && c.json?.is_final === true), 30_000);
  }

  test('is kept in history, and the next turn is sent with it', async () => {
    const session = uniqueName('odd-answer');
    sys.llm.script({ text: 'nul \u0000 and \ud800 here' }, { text: 'second answer' });
    await ask(session, 'first');
    await ask(session, 'second');
    const second = sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes('second'));
    assert.ok(second, 'the model got the second message');
    const assistant = (second.body.messages ?? []).filter((m) => m.role === 'assistant').map((m) => m.content);
    assert.deepEqual(assistant, ['nul  and \uFFFD here'], 'the first answer is in the history sent with the second');
    const prisma = createPrismaClient(sys.db.url);
    try {
      const records = await waitUntil('both queries to end', async () => {
        const rows = await prisma.queryRecord.findMany({ where: { launcherId: session } });
        return rows.length === 2 && rows.every((r) => r.status !== 'running') ? rows : undefined;
      });
      assert.deepEqual(records.map((r) => [r.status, r.error]), [['succeeded', null], ['succeeded', null]]);
    } finally {
      await prisma.$disconnect();
    }
  });
});
