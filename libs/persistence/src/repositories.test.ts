import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTempDatabase } from './testing/index.js';
import { findBotWithPipeline } from './repositories.js';

const database = useTempDatabase();

test('a bot id Postgres cannot store is unknown, and does not fail the lookups batched with it', async () => {
  const prisma = database().prisma;
  const pipeline = await prisma.pipeline.create({ data: { id: randomUUID(), name: 'p', stages: [], config: {} } });
  const bot = await prisma.bot.create({ data: { name: 'b', adapter: 'http-bot', adapterConfig: {}, pipelineId: pipeline.id } });
  // In the same tick, as a dispatcher looks up the bots of the events it handles at once: Prisma puts
  // concurrent lookups into one statement.
  const [found, withNul, withSurrogate] = await Promise.all([
    findBotWithPipeline(prisma, bot.id),
    findBotWithPipeline(prisma, `${bot.id}\u0000`),
    findBotWithPipeline(prisma, `${bot.id}\ud800`),
  ]);
  assert.equal(found?.id, bot.id);
  assert.equal(found?.pipeline.id, pipeline.id);
  assert.equal(withNul, null);
  assert.equal(withSurrogate, null);
});
