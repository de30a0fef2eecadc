import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTempDatabase } from './testing/index.js';
import { RETENTION_LOCK_KEYS, RetentionPruner, type RetentionPolicy } from './retention.js';

const database = useTempDatabase();
const DAY = 86_400_000;
const policy: RetentionPolicy = { queryDays: 30, rollupDays: 0, conversationDays: 90, auditDays: 365, deadLetterDays: 14 };
const options = { batchSize: 1_000, pauseMs: 10, maxBatchesPerKind: 100 };

/** `count` query records of `botId` received `ageDays` ago, in one statement. */
async function seedQueries(botId: string, count: number, ageDays: number, status = 'succeeded'): Promise<void> {
  await database().pool.query(
    `INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "status", "receivedAt")
     SELECT gen_random_uuid()::text, $1, 'person', 'p' || g, $4, ($3::timestamp - make_interval(days => $2::int)) FROM generate_series(1, $5::int) g`,
    [botId, ageDays, new Date().toISOString(), status, count],
  );
}

async function seedConversation(botId: string, launcherId: string, idleDays: number, messages: number): Promise<string> {
  const id = randomUUID();
  const at = new Date(Date.now() - idleDays * DAY);
  await database().prisma.conversation.create({
    data: { id, botId, launcherType: 'person', launcherId, pipelineId: 'p', createdAt: at, updatedAt: at, messages: { create: Array.from({ length: messages }, (_, i) => ({ seq: i + 1, role: 'user', content: `m${i}`, createdAt: at })) } },
  });
  // @updatedAt is set by the client on create; the age is what the test means.
  await database().pool.query('UPDATE "Conversation" SET "updatedAt" = $2::timestamp WHERE "id" = $1', [id, at.toISOString()]);
  return id;
}

const countQueries = async (botId: string) => database().prisma.queryRecord.count({ where: { botId } });

test('old query records go in batches of at most batchSize, young ones stay', async () => {
  const bot = `bot-${randomUUID()}`;
  await seedQueries(bot, 2_500, 31);
  await seedQueries(bot, 7, 29);
  const summary = await new RetentionPruner(database().pool, { ...policy, conversationDays: 0, auditDays: 0 }, options).run();
  assert.equal(summary.pruned.query, 2_500);
  // 1,000 + 1,000 + 500: the short batch shows nothing older is left.
  assert.equal(summary.batches, 3);
  assert.equal(summary.contended, false);
  assert.deepEqual(summary.unfinished, []);
  assert.equal(await countQueries(bot), 7);
});

test('a run stops at maxBatchesPerKind and says so; the next run takes the rest', async () => {
  const bot = `bot-${randomUUID()}`;
  await seedQueries(bot, 250, 40);
  const pruner = new RetentionPruner(database().pool, { ...policy, conversationDays: 0, auditDays: 0 }, { batchSize: 100, pauseMs: 0, maxBatchesPerKind: 2 });
  const first = await pruner.run();
  assert.equal(first.pruned.query, 200);
  assert.deepEqual(first.unfinished, ['query']);
  assert.equal(await countQueries(bot), 50);
  const second = await pruner.run();
  assert.equal(second.pruned.query, 50);
  assert.deepEqual(second.unfinished, []);
  assert.equal(await countQueries(bot), 0);
});

test('conversations idle past their age go with their messages; recent ones and those of a chat with a query in flight stay', async () => {
  const bot = `bot-${randomUUID()}`;
  const idle = await seedConversation(bot, 'idle', 100, 2_500);
  const recent = await seedConversation(bot, 'recent', 10, 3);
  const inFlight = await seedConversation(bot, 'busy', 100, 4);
  // A run of the busy chat loaded its idle conversation and will append to it when it finishes.
  await database().pool.query(
    `INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "status", "receivedAt") VALUES ($1, $2, 'person', 'busy', 'running', now())`,
    [randomUUID(), bot],
  );
  const summary = await new RetentionPruner(database().pool, { ...policy, queryDays: 0, auditDays: 0 }, options).run();
  assert.equal(summary.pruned.message, 2_500);
  assert.equal(summary.pruned.conversation, 1);
  const left = await database().prisma.conversation.findMany({ where: { botId: bot }, select: { id: true, _count: { select: { messages: true } } }, orderBy: { launcherId: 'asc' } });
  assert.deepEqual(left.map((c) => [c.id, c._count.messages]), [[inFlight, 4], [recent, 3]]);
  assert.equal(await database().prisma.conversationMessage.count({ where: { conversationId: idle } }), 0);
});

test('audit entries past their age go; 0 keeps a kind forever', async () => {
  const tag = `res-${randomUUID()}`;
  const at = (days: number) => new Date(Date.now() - days * DAY);
  await database().prisma.auditEntry.createMany({
    data: [400, 366, 10].map((days) => ({ at: at(days), actor: 'admin', resource: tag, resourceId: String(days), action: 'update' })),
  });
  const bot = `bot-${randomUUID()}`;
  await seedQueries(bot, 3, 1_000);
  const summary = await new RetentionPruner(database().pool, { ...policy, queryDays: 0, conversationDays: 0 }, options).run();
  assert.equal(summary.pruned.audit, 2);
  assert.equal(summary.pruned.query, 0);
  const left = await database().prisma.auditEntry.findMany({ where: { resource: tag }, select: { resourceId: true } });
  assert.deepEqual(left.map((e) => e.resourceId), ['10']);
  assert.equal(await countQueries(bot), 3);
});

test('dead letters are pruned through the given batch function with the cutoff and the batch size', async () => {
  const calls: [number, number][] = [];
  const now = new Date('2030-01-15T00:00:00Z');
  let left = 1_200;
  const pruner = new RetentionPruner(database().pool, { queryDays: 0, rollupDays: 0, conversationDays: 0, auditDays: 0, deadLetterDays: 14 }, {
    ...options,
    now: () => now,
    deadLetters: async (cutoff, limit) => {
      calls.push([cutoff.getTime(), limit]);
      const n = Math.min(left, limit);
      left -= n;
      return n;
    },
  });
  const summary = await pruner.run();
  assert.equal(summary.pruned.dead_letter, 1_200);
  assert.deepEqual(calls, [[now.getTime() - 14 * DAY, 1_000], [now.getTime() - 14 * DAY, 1_000]]);
});

test('while another process holds the pruning lock, a run deletes nothing and reports the contention', async () => {
  const bot = `bot-${randomUUID()}`;
  await seedQueries(bot, 5, 60);
  const holder = await database().pool.connect();
  try {
    await holder.query('BEGIN');
    const pruner = new RetentionPruner(database().pool, { ...policy, conversationDays: 0, auditDays: 0 }, options);
    // The holder takes the same lock the pruner takes, in a transaction (as another replica's batch would).
    const probe = await new RetentionPruner(database().pool, { queryDays: 0, rollupDays: 0, conversationDays: 0, auditDays: 0, deadLetterDays: 1 }, {
      ...options,
      deadLetters: async () => {
        const { rows } = await holder.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2) AS locked', [...RETENTION_LOCK_KEYS]);
        assert.equal(rows[0].locked, false, 'the lock is held by the running batch');
        return 0;
      },
    }).run();
    assert.equal(probe.contended, false);
    await holder.query('SELECT pg_advisory_xact_lock($1, $2)', [...RETENTION_LOCK_KEYS]);
    const summary = await pruner.run();
    assert.equal(summary.contended, true);
    assert.equal(summary.pruned.query, 0);
    assert.equal(await countQueries(bot), 5);
    await holder.query('COMMIT');
    // Transaction-scoped: with the holder's transaction over, the lock is free again.
    const after = await pruner.run();
    assert.equal(after.contended, false);
    assert.equal(await countQueries(bot), 0);
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
});
