import type { PrismaClient } from './generated/prisma/client.js';

export interface QueryStart {
  id: string;
  botId: string;
  pipelineId: string | null;
  launcherType: string;
  launcherId: string;
  receivedAt: Date;
  traceId?: string;
  attempt: number;
}

const MAX_ERROR_CHARS = 4000;

/** The query log (QueryRecord): what happened to each accepted message, for operators and users' support. */
export class QueryLog {
  constructor(private readonly prisma: PrismaClient) {}

  /** Upsert, because a redelivered query starts again: the newest attempt wins, a finished query stays finished. */
  async running(q: QueryStart): Promise<void> {
    await this.prisma.queryRecord.upsert({
      where: { id: q.id },
      create: { ...q, status: 'running', startedAt: new Date() },
      update: { attempt: q.attempt, traceId: q.traceId, pipelineId: q.pipelineId },
    });
  }

  async failed(id: string, error: string): Promise<void> {
    await this.prisma.queryRecord.updateMany({
      where: { id },
      data: { status: 'failed', finishedAt: new Date(), error: error.slice(0, MAX_ERROR_CHARS) },
    });
  }

  async succeeded(id: string): Promise<void> {
    await this.prisma.queryRecord.updateMany({ where: { id, status: { not: 'failed' } }, data: { status: 'succeeded', finishedAt: new Date() } });
  }
}
