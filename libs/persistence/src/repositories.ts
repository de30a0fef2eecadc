import type { PrismaClient } from './generated/prisma/client.js';

/** The bot with its pipeline, as ingress and the orchestrator route a query; null when unknown. */
export function findBotWithPipeline(prisma: PrismaClient, botId: string) {
  return prisma.bot.findUnique({ where: { id: botId }, include: { pipeline: true } });
}
