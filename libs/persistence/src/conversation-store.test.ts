import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTempDatabase, type TempDatabase } from './testing/index.js';
import { closeDatabase, createDatabase, type Database } from './client.js';
import { ConversationStore } from './conversation-store.js';
import { QueryLog } from './query-log.js';

let db: TempDatabase;
let database: Database;
let prisma: Database['prisma'];

before(async () => {
  db = await createTempDatabase();
  database = createDatabase(db.url);
  prisma = database.prisma;
});

after(async () => {
  if (database) await closeDatabase(database);
  await db?.drop();
});

const key = { botId: 'bot-1', adapter: 'http-bot' as const, launcherType: 'person', launcherId: 'alice' };

async function startQuery(log: QueryLog): Promise<string> {
  const id = randomUUID();
  log.running({ id, botId: key.botId, pipelineId: 'p', launcherType: key.launcherType, launcherId: key.launcherId, receivedAt: new Date(), attempt: 1 });
  await log.flush();
  return id;
}

test('a finished turn is appended once, in order, and marks the query succeeded', async () => {
  const store = new ConversationStore(database);
  const log = new QueryLog(database.pool);
  const conversation = await store.activeConversation(key, 'p');
  assert.equal(conversation.created, true);
  assert.deepEqual(await store.activeConversation(key, 'p'), { id: conversation.id, created: false });

  const q1 = await startQuery(log);
  const turn = [
    { role: 'user' as const, content: 'weather?' },
    { role: 'assistant' as const, content: null, tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'weather', arguments: '{}' } }] },
    { role: 'tool' as const, content: 'sunny', tool_call_id: 'c1' },
    { role: 'assistant' as const, content: 'It is sunny.' },
  ];
  assert.equal(await store.completeTurn({ id: q1, ...key }, conversation.id, turn), true);
  assert.equal(await store.completeTurn({ id: q1, ...key }, conversation.id, turn), false, 'a redelivered run appends nothing');
  assert.deepEqual(await store.history(conversation.id, 100), turn);
  assert.equal((await prisma.queryRecord.findUniqueOrThrow({ where: { id: q1 } })).status, 'succeeded');

  const q2 = await startQuery(log);
  await store.completeTurn({ id: q2, ...key }, conversation.id, [{ role: 'user', content: 'thanks' }, { role: 'assistant', content: 'welcome' }]);
  const last3 = await store.history(conversation.id, 3);
  assert.deepEqual(last3.map((m) => m.content), ['It is sunny.', 'thanks', 'welcome'], 'the newest messages, oldest first');
});

test('reset archives the active conversation; the next one starts empty', async () => {
  const store = new ConversationStore(database);
  const before = await store.activeConversation(key, 'p');
  assert.equal(await store.reset(key), true);
  assert.equal(await store.reset(key), false, 'nothing left to archive');
  const after = await store.activeConversation(key, 'p');
  assert.notEqual(after.id, before.id);
  assert.deepEqual(await store.history(after.id, 100), []);
});

test('a web chat and the bot\'s platform chat of the same launcher have separate conversations and resets', async () => {
  const store = new ConversationStore(database);
  const platform = { ...key, launcherId: `erin-${randomUUID()}` };
  const web = { ...platform, adapter: 'webchat' as const };
  const platformTurn = await store.load(platform, 'p', 10);
  const q = randomUUID();
  await store.completeTurn({ id: q, ...platform }, platformTurn.conversationId, [{ role: 'user', content: 'platform secret' }]);
  const webTurn = await store.load(web, 'p', 10);
  assert.notEqual(webTurn.conversationId, platformTurn.conversationId);
  assert.deepEqual(webTurn.history, [], 'the web chat does not see the platform chat');
  assert.equal(await store.reset(web), true);
  const again = await store.load(platform, 'p', 10);
  assert.equal(again.conversationId, platformTurn.conversationId, 'the web chat reset left the platform conversation alone');
  assert.deepEqual(again.history.map((m) => m.content), ['platform secret']);
  // The platform conversation is stored under LangBot's key, as before the web chat had its own.
  const stored = await prisma.conversation.findUniqueOrThrow({ where: { id: platformTurn.conversationId } });
  assert.deepEqual([stored.launcherType, stored.launcherId], ['person', platform.launcherId]);
});

test('routing the chat to another pipeline starts a new conversation, as LangBot does', async () => {
  const store = new ConversationStore(database);
  const a = await store.activeConversation({ ...key, launcherId: 'bob' }, 'p');
  const b = await store.activeConversation({ ...key, launcherId: 'bob' }, 'other');
  assert.notEqual(a.id, b.id);
  assert.equal(b.created, true);
});

test('load returns the active conversation with its newest messages in one call, creating it when missing', async () => {
  const store = new ConversationStore(database);
  const chat = { ...key, launcherId: `carol-${randomUUID()}` };
  const first = await store.load(chat, 'p', 2);
  assert.deepEqual(first.history, []);
  const log = new QueryLog(database.pool);
  const q = await startQuery(log);
  await store.completeTurn({ id: q, ...chat }, first.conversationId, [
    { role: 'user', content: 'one' },
    { role: 'assistant', content: 'two' },
    { role: 'user', content: 'three' },
  ]);
  const again = await store.load(chat, 'p', 2);
  assert.equal(again.conversationId, first.conversationId);
  assert.deepEqual(again.history.map((m) => m.content), ['two', 'three']);
  const other = await store.load(chat, 'other', 2);
  assert.notEqual(other.conversationId, first.conversationId, 'another pipeline starts a new conversation');
});

test('completeTurn records the query itself when the group-committed log has not written it yet', async () => {
  const store = new ConversationStore(database);
  const chat = { ...key, launcherId: `dave-${randomUUID()}` };
  const { conversationId } = await store.load(chat, 'p', 10);
  const id = randomUUID();
  assert.equal(await store.completeTurn({ id, ...chat }, conversationId, [{ role: 'user', content: 'hi' }]), true);
  assert.equal((await prisma.queryRecord.findUniqueOrThrow({ where: { id } })).status, 'succeeded');
  // The late 'running' entry of the same query does not turn it back.
  const log = new QueryLog(database.pool);
  log.running({ id, botId: chat.botId, pipelineId: 'p', launcherType: chat.launcherType, launcherId: chat.launcherId, receivedAt: new Date(), attempt: 2 });
  await log.flush();
  const row = await prisma.queryRecord.findUniqueOrThrow({ where: { id } });
  assert.equal(row.status, 'succeeded');
  assert.equal(row.attempt, 2);
});

test('the query log keeps a failure final and writes a group of entries together', async () => {
  const log = new QueryLog(database.pool);
  const ids = Array.from({ length: 20 }, () => randomUUID());
  for (const id of ids) log.running({ id, botId: 'b', pipelineId: null, launcherType: 'person', launcherId: 'x', receivedAt: new Date(), attempt: 1 });
  log.failed(ids[0], 'model down');
  log.succeeded(ids[0]);
  log.succeeded(ids[1]);
  await log.flush();
  const rows = await prisma.queryRecord.findMany({ where: { id: { in: ids } } });
  assert.equal(rows.length, 20);
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.equal(byId.get(ids[0])!.status, 'failed');
  assert.equal(byId.get(ids[0])!.error, 'model down');
  assert.equal(byId.get(ids[1])!.status, 'succeeded');
  assert.equal(byId.get(ids[2])!.status, 'running');
});

test('turns finished together are appended in one statement, each to its conversation and in order; loads likewise', async () => {
  let statements = 0;
  const counting: Database = { ...database, statements: { query: (text, values) => (statements++, database.statements.query(text, values)) } };
  const store = new ConversationStore(counting);
  const chats = Array.from({ length: 8 }, (_, i) => ({ ...key, launcherId: `group-${i}-${randomUUID()}` }));
  const conversations = await Promise.all(chats.map((chat) => store.load(chat, 'p', 10)));
  statements = 0;
  // Two turns for each conversation, all at once: a conversation's second turn must follow its first.
  const queries = chats.flatMap((chat, i) => [0, 1].map((turn) => ({ id: randomUUID(), chat, conversationId: conversations[i]!.conversationId, turn })));
  const appended = await Promise.all(queries.map((q) =>
    store.completeTurn({ id: q.id, ...q.chat }, q.conversationId, [{ role: 'user', content: `q${q.turn}` }, { role: 'assistant', content: `a${q.turn}` }])));
  assert.deepEqual(appended, queries.map(() => true));
  assert.equal(statements, 3, 'the first turn alone, then one turn of each conversation, then the rest');
  for (const { conversationId } of conversations) {
    assert.deepEqual((await store.history(conversationId, 10)).map((m) => m.content), ['q0', 'a0', 'q1', 'a1']);
  }
  // Loaded together, each chat gets its own conversation and history.
  statements = 0;
  const loaded = await Promise.all(chats.map((chat) => store.load(chat, 'p', 3)));
  assert.equal(statements, 2, 'the first load alone, then the others together');
  assert.deepEqual(loaded.map((l) => l.conversationId), conversations.map((c) => c.conversationId));
  for (const l of loaded) assert.deepEqual(l.history.map((m) => m.content), ['a0', 'q1', 'a1']);
  // A query already succeeded appends nothing, and does not keep the others of its statement out.
  const again = await Promise.all([queries[0]!, queries[2]!].map((q) => store.completeTurn({ id: q.id, ...q.chat }, q.conversationId, [{ role: 'user', content: 'again' }])));
  assert.deepEqual(again, [false, false]);
});

test('a finished turn carries the run\'s model, tokens, cost and timing; a failure carries them too; the orchestrator\'s stages are appended', async () => {
  const store = new ConversationStore(database);
  const log = new QueryLog(database.pool);
  const chat = { ...key, launcherId: `erin-${randomUUID()}` };
  const { conversationId } = await store.load(chat, 'p', 10);
  const ok = await startQuery(log);
  log.timeline(ok, [{ stage: 'PreProcessor', at: 1_000, ms: 3 }]);
  await log.flush();
  const run = { runner: 'local-agent', model: 'gpt', modelCalls: 2, inputTokens: 120, outputTokens: 30, cost: 0.5, timing: { stage: 'run local-agent', at: 2_000, ms: 40 } };
  assert.equal(await store.completeTurn({ id: ok, ...chat }, conversationId, [{ role: 'user', content: 'hi' }], null, run), true);
  const bad = await startQuery(log);
  log.failed(bad, 'model call failed', null, { ...run, cost: null, outputTokens: 0 });
  await log.flush();
  const rows = await prisma.queryRecord.findMany({ where: { id: { in: [ok, bad] } } });
  const byId = new Map(rows.map((r) => [r.id, r]));
  const good = byId.get(ok)!;
  assert.deepEqual([good.runner, good.model, good.modelCalls, good.inputTokens, good.outputTokens, good.cost], ['local-agent', 'gpt', 2, 120, 30, 0.5]);
  assert.deepEqual(good.stages, [{ stage: 'PreProcessor', at: 1_000, ms: 3 }, { stage: 'run local-agent', at: 2_000, ms: 40 }]);
  const failed = byId.get(bad)!;
  assert.deepEqual([failed.status, failed.model, failed.inputTokens, failed.cost], ['failed', 'gpt', 120, null]);
});

test('turns written while the query log updates the same records in another order do not deadlock, and nothing is lost', async () => {
  // Each side writes its rows in one statement, as under load, from its own connection: the run's turns
  // (the runner) and the stage timelines (the orchestrator's and the dispatcher's query log). Rows they
  // lock in different orders deadlock, and Postgres then fails one statement after `deadlock_timeout`.
  const store = new ConversationStore(database);
  const errors: unknown[] = [];
  const log = new QueryLog(database.pool, (err) => errors.push(err));
  const count = 400;
  for (let round = 0; round < 5; round++) {
    const chats = Array.from({ length: count }, () => ({ ...key, launcherId: `lock-${randomUUID()}` }));
    const ids = chats.map(() => randomUUID());
    // Started in a random order, so the table's physical order is neither the ids' nor the reverse.
    for (const i of [...ids.keys()].sort(() => Math.random() - 0.5)) {
      log.running({ id: ids[i]!, botId: key.botId, pipelineId: 'p', launcherType: key.launcherType, launcherId: chats[i]!.launcherId, receivedAt: new Date(), attempt: 1 });
    }
    await log.flush();
    const conversations = await Promise.all(chats.map((chat) => store.activeConversation(chat, 'p')));
    const ascending = [...ids.keys()].sort((a, b) => ids[a]!.localeCompare(ids[b]!));
    // A turn in flight first, so the others leave together as one statement the moment it ends, and
    // the query log's statement goes out then too.
    const pilot = { ...key, launcherId: `lock-${randomUUID()}` };
    const first = store.completeTurn({ id: randomUUID(), ...pilot }, (await store.activeConversation(pilot, 'p')).id, [{ role: 'user', content: 'first' }]);
    const turns = Promise.all(ascending.map((i) => store.completeTurn({ id: ids[i]!, ...chats[i]! }, conversations[i]!.id, [{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }])));
    for (const i of [...ascending].reverse()) log.timeline(ids[i]!, [{ stage: 'SendResponseBackStage', at: Date.now(), ms: 1 }]);
    await first;
    const [appended] = await Promise.all([turns, log.flush()]);
    assert.deepEqual(errors, [], `round ${round}: the query log lost a group`);
    assert.equal(appended.filter(Boolean).length, count);
    const rows = await prisma.queryRecord.findMany({ where: { id: { in: ids } }, select: { status: true, stages: true } });
    assert.equal(rows.filter((r) => r.status === 'succeeded' && JSON.stringify(r.stages).includes('SendResponseBackStage')).length, count, `round ${round}`);
  }
});
