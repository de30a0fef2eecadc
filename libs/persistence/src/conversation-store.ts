import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { chatKey, storableEventBody, type ChatKey, type ChatRef, type LlmMessage } from '@conveyor/contracts';
import type { Database } from './client.js';
import type { DoneEvent } from './query-log.js';

/** The chat whose conversation is meant; the store keys it with `chatKey`, so the adapter is part of the key. */
export type ConversationKey = ChatRef;

/**
 * Conversation history shared by every replica (LangBot keeps it in process memory). The active
 * conversation of a chat is the one not archived; a reset archives it.
 */
export class ConversationStore {
  private readonly prisma: Database['prisma'];
  private readonly pool: pg.Pool;

  constructor(db: Database) {
    this.prisma = db.prisma;
    this.pool = db.pool;
  }

  /**
   * What a run needs of the chat, in one round trip: the active conversation and its newest `limit`
   * messages (oldest first). A missing conversation, or one of another pipeline, is replaced.
   */
  async load(chat: ConversationKey, pipelineId: string, limit: number): Promise<{ conversationId: string; history: LlmMessage[] }> {
    const key = chatKey(chat);
    const { rows } = await this.pool.query<{ id: string; pipelineId: string; history: MessageRow[] }>(
      `SELECT c."id", c."pipelineId", COALESCE((
         SELECT json_agg(m ORDER BY m."seq") FROM (
           SELECT "seq", "role", "content", "toolCalls", "toolCallId" FROM "ConversationMessage"
           WHERE "conversationId" = c."id" ORDER BY "seq" DESC LIMIT $4) m), '[]'::json) AS "history"
       FROM "Conversation" c
       WHERE c."botId" = $1 AND c."launcherType" = $2 AND c."launcherId" = $3 AND c."archivedAt" IS NULL
       ORDER BY c."createdAt" DESC LIMIT 1`,
      [key.botId, key.launcherType, key.launcherId, limit],
    );
    const active = rows[0];
    if (active && active.pipelineId === pipelineId) return { conversationId: active.id, history: active.history.map(toLlmMessage) };
    return { conversationId: await this.startConversation(key, pipelineId), history: [] };
  }

  /** Archives the chat's active conversation, if any, and starts a new one of `pipelineId`: one statement. */
  private async startConversation(key: ChatKey, pipelineId: string): Promise<string> {
    const id = randomUUID();
    await this.pool.query(
      `WITH archived AS (
         UPDATE "Conversation" SET "archivedAt" = now()
         WHERE "botId" = $2 AND "launcherType" = $3 AND "launcherId" = $4 AND "archivedAt" IS NULL
       )
       INSERT INTO "Conversation" ("id", "botId", "launcherType", "launcherId", "pipelineId", "createdAt", "updatedAt")
       VALUES ($1, $2, $3, $4, $5, now(), now())`,
      [id, key.botId, key.launcherType, key.launcherId, pipelineId],
    );
    return id;
  }

  /**
   * The chat's active conversation, created when missing. Like LangBot, a conversation belongs to one
   * pipeline: routing the chat to another pipeline starts a new one.
   */
  async activeConversation(chat: ConversationKey, pipelineId: string): Promise<{ id: string; created: boolean }> {
    const key = chatKey(chat);
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
    return rows.reverse().map((r) => toLlmMessage(r as MessageRow));
  }

  /**
   * Appends a finished turn and marks the query succeeded, atomically and once: a redelivered run
   * that finishes again finds the query already succeeded and appends nothing. One statement, so the
   * hot path pays one round trip instead of an interactive transaction's six. The query's record is
   * created here when the group-committed log has not written it yet.
   */
  async completeTurn(
    query: { id: string; botId: string; launcherType: string; launcherId: string },
    conversationId: string,
    messages: LlmMessage[],
    done: DoneEvent | null = null,
  ): Promise<boolean> {
    const rows = JSON.stringify(
      messages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: m.tool_calls ?? null, toolCallId: m.tool_call_id ?? null })),
    );
    const result = await this.pool.query(
      `WITH marked AS (
        INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "receivedAt", "status", "finishedAt", "doneAttempt", "doneSeq", "doneEvent")
        VALUES ($1, $3, $4, $5, now(), 'succeeded', now(), $7, $8, $9)
        ON CONFLICT ("id") DO UPDATE SET "status" = 'succeeded', "finishedAt" = now(), "error" = NULL, "doneAttempt" = $7, "doneSeq" = $8, "doneEvent" = $9
        WHERE "QueryRecord"."status" <> 'succeeded'
        RETURNING "id"
      ), base AS (
        SELECT COALESCE(MAX("seq"), 0) AS seq FROM "ConversationMessage" WHERE "conversationId" = $2
      ), touched AS (
        UPDATE "Conversation" SET "updatedAt" = now() WHERE "id" = $2 AND EXISTS (SELECT 1 FROM marked)
      )
      INSERT INTO "ConversationMessage" ("conversationId", "seq", "role", "content", "toolCalls", "toolCallId")
      SELECT $2, base.seq + m.ord, m.role, COALESCE(m.content, 'null'::jsonb), m."toolCalls", m."toolCallId"
      FROM marked, base,
        ROWS FROM (jsonb_to_recordset($6::jsonb) AS ("role" text, "content" jsonb, "toolCalls" jsonb, "toolCallId" text))
        WITH ORDINALITY AS m("role", "content", "toolCalls", "toolCallId", ord)`,
      [query.id, conversationId, query.botId, query.launcherType, query.launcherId, rows, done?.attempt ?? null, done?.seq ?? null, done?.event ? JSON.stringify(storableEventBody(done.event)) : null],
    );
    return (result.rowCount ?? 0) > 0;
  }

  /** Starts a new conversation for the chat; returns whether there was one to archive. */
  async reset(chat: ConversationKey): Promise<boolean> {
    const key = chatKey(chat);
    const archived = await this.prisma.conversation.updateMany({ where: { ...key, archivedAt: null }, data: { archivedAt: new Date() } });
    return archived.count > 0;
  }
}

interface MessageRow {
  role: string;
  content: unknown;
  toolCalls: unknown;
  toolCallId: string | null;
}

function toLlmMessage(r: MessageRow): LlmMessage {
  return {
    role: r.role as LlmMessage['role'],
    content: r.content as LlmMessage['content'],
    ...(r.toolCalls ? { tool_calls: r.toolCalls as LlmMessage['tool_calls'] } : {}),
    ...(r.toolCallId ? { tool_call_id: r.toolCallId } : {}),
  };
}
