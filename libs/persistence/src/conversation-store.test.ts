import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTempDatabase, type TempDatabase } from './testing/index.js';
import { createPrismaClient } from './client.js';
import { ConversationStore } from './conversation-store.js';
import { QueryLog } from './query-log.js';
import type { PrismaClient } from './generated/prisma/client.js';

let db: TempDatabase;
let prisma: PrismaClient;

before(async () => {
  db = await createTempDatabase();
  prisma = createPrismaClient(db.url);
});

after(async () => {
  await prisma?.$disconnect();
  await db?.drop();
});

const key = { botId: 'bot-1', launcherType: 'person', launcherId: 'alice' };

async function startQuery(log: QueryLog): Promise<string> {
  const id = randomUUID();
  await log.running({ id, botId: key.botId, pipelineId: 'p', launcherType: key.launcherType, launcherId: key.launcherId, receivedAt: new Date(), attempt: 1 });
  return id;
}

test('a finished turn is appended once, in order, and marks the query succeeded', async () => {
  const store = new ConversationStore(prisma);
  const log = new QueryLog(prisma);
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
  assert.equal(await store.completeTurn(q1, conversation.id, turn), true);
  assert.equal(await store.completeTurn(q1, conversation.id, turn), false, 'a redelivered run appends nothing');
  assert.deepEqual(await store.history(conversation.id, 100), turn);
  assert.equal((await prisma.queryRecord.findUniqueOrThrow({ where: { id: q1 } })).status, 'succeeded');

  const q2 = await startQuery(log);
  await store.completeTurn(q2, conversation.id, [{ role: 'user', content: 'thanks' }, { role: 'assistant', content: 'welcome' }]);
  const last3 = await store.history(conversation.id, 3);
  assert.deepEqual(last3.map((m) => m.content), ['It is sunny.', 'thanks', 'welcome'], 'the newest messages, oldest first');
});

test('reset archives the active conversation; the next one starts empty', async () => {
  const store = new ConversationStore(prisma);
  const before = await store.activeConversation(key, 'p');
  assert.equal(await store.reset(key), true);
  assert.equal(await store.reset(key), false, 'nothing left to archive');
  const after = await store.activeConversation(key, 'p');
  assert.notEqual(after.id, before.id);
  assert.deepEqual(await store.history(after.id, 100), []);
});

test('routing the chat to another pipeline starts a new conversation, as LangBot does', async () => {
  const store = new ConversationStore(prisma);
  const a = await store.activeConversation({ ...key, launcherId: 'bob' }, 'p');
  const b = await store.activeConversation({ ...key, launcherId: 'bob' }, 'other');
  assert.notEqual(a.id, b.id);
  assert.equal(b.created, true);
});
