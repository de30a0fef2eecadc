import { storableText } from '@conveyor/contracts';
import type { PrismaClient } from './generated/prisma/client.js';

/** The bot with its pipeline, as ingress and the orchestrator route a query; null when unknown. */
export async function findBotWithPipeline(prisma: Pick<PrismaClient, 'bot'>, botId: string) {
  // No bot has an id Postgres cannot store (NUL, a lone surrogate), and asking fails the statement:
  // Prisma puts concurrent lookups into one statement, so every lookup made with it would fail too.
  if (storableText(botId) !== botId) return null;
  return prisma.bot.findUnique({ where: { id: botId }, include: { pipeline: true } });
}
