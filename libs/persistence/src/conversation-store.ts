import type { LlmMessage } from '@conveyor/contracts';
import type { PrismaClient } from './generated/prisma/client.js';

export interface ConversationKey {
  botId: string;
  launcherType: string;
  launcherId: string;
}

/**
 * Conversation history shared by every replica (LangBot keeps it in process memory). The active
 * conversation of a chat is the one not archived; a reset archives it.
 */
export class ConversationStore {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * The chat's active conversation, created when missing. Like LangBot, a conversation belongs to one
   * pipeline: routing the chat to another pipeline starts a new one.
   */
  async activeConversation(key: ConversationKey, pipelineId: string): Promise<{ id: string; created: boolean }> {
    const active = await this.prisma.conversation.findFirst({
      where: { ...key, archivedAt: null },
      orderBy: { createdAt: 'desc' },
      select: { id: true, pipelineId: true },
    });
    if (active && active.pipelineId === pipelineId) return { id: active.id, created: false };
    return this.prisma.$transaction(async (tx) => {
      if (active) await tx.conversation.update({ where: { id: active.id }, data: { archivedAt: new Date() } });
      const created = await tx.conversation.create({ data: { ...key, pipelineId }, select: { id: true } });
      return { id: created.id, created: true };
    });
  }

  /** The newest `limit` messages, oldest first. */
  async history(conversationId: string, limit: number): Promise<LlmMessage[]> {
    const rows = await this.prisma.conversationMessage.findMany({
      where: { conversationId },
      orderBy: { seq: 'desc' },
      take: limit,
    });
    return rows.reverse().map((r) => ({
      role: r.role as LlmMessage['role'],
      content: r.content as LlmMessage['content'],
      ...(r.toolCalls ? { tool_calls: r.toolCalls as LlmMessage['tool_calls'] } : {}),
      ...(r.toolCallId ? { tool_call_id: r.toolCallId } : {}),
    }));
  }

  /**
   * Appends a finished turn and marks the query succeeded, atomically and once: a redelivered run
   * that finishes again finds the query already succeeded and appends nothing. One statement, so the
   * hot path pays one round trip instead of an interactive transaction's six.
   */
  async completeTurn(queryId: string, conversationId: string, messages: LlmMessage[]): Promise<boolean> {
    const rows = JSON.stringify(
      messages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: m.tool_calls ?? null, toolCallId: m.tool_call_id ?? null })),
    );
    const inserted = await this.prisma.$executeRaw`
      WITH marked AS (
        UPDATE "QueryRecord" SET "status" = 'succeeded', "finishedAt" = now(), "error" = NULL
        WHERE "id" = ${queryId} AND "status" <> 'succeeded'
        RETURNING "id"
      ), base AS (
        SELECT COALESCE(MAX("seq"), 0) AS seq FROM "ConversationMessage" WHERE "conversationId" = ${conversationId}
      ), touched AS (
        UPDATE "Conversation" SET "updatedAt" = now() WHERE "id" = ${conversationId} AND EXISTS (SELECT 1 FROM marked)
      )
      INSERT INTO "ConversationMessage" ("conversationId", "seq", "role", "content", "toolCalls", "toolCallId")
      SELECT ${conversationId}, base.seq + m.ord, m.role, COALESCE(m.content, 'null'::jsonb), m."toolCalls", m."toolCallId"
      FROM marked, base,
        ROWS FROM (jsonb_to_recordset(${rows}::jsonb) AS ("role" text, "content" jsonb, "toolCalls" jsonb, "toolCallId" text))
        WITH ORDINALITY AS m("role", "content", "toolCalls", "toolCallId", ord)`;
    return inserted > 0;
  }

  /** Starts a new conversation for the chat; returns whether there was one to archive. */
  async reset(key: ConversationKey): Promise<boolean> {
    const archived = await this.prisma.conversation.updateMany({ where: { ...key, archivedAt: null }, data: { archivedAt: new Date() } });
    return archived.count > 0;
  }
}
