import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { chatKey, storableEventBody, type ChatKey, type ChatRef, type LlmMessage } from '@conveyor/contracts';
import type { Database } from './client.js';
import type { DoneEvent } from './query-log.js';
import { WriteBatcher } from './write-batcher.js';

/** The chat whose conversation is meant; the store keys it with `chatKey`, so the adapter is part of the key. */
export type ConversationKey = ChatRef;

/**
 * Conversation history shared by every replica (LangBot keeps it in process memory). The active
 * conversation of a chat is the one not archived; a reset archives it.
 */
export class ConversationStore {
  private readonly prisma: Database['prisma'];
  private readonly pool: pg.Pool;

  /** Turn writes, group-committed; a query and a conversation each appear once per statement. */
  private readonly turns = new WriteBatcher<TurnRow, boolean>({
    spanName: 'conversation.append_turns',
    writeBatch: (turns) => this.writeTurns(turns),
    keysOf: (t) => [`q:${t.queryId}`, `c:${t.conversationId}`],
  });

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
   * that finishes again finds the query already succeeded and appends nothing (false). The query's
   * record is created here when the group-committed log has not written it yet. Turns finished while
   * another is being written leave together in one statement (see WriteBatcher); a caller still waits
   * for its own turn to be committed, so nothing a reply depends on is deferred.
   */
  completeTurn(
    query: { id: string; botId: string; launcherType: string; launcherId: string },
    conversationId: string,
    messages: LlmMessage[],
    done: DoneEvent | null = null,
  ): Promise<boolean> {
    return this.turns.write({
      queryId: query.id,
      conversationId,
      botId: query.botId,
      launcherType: query.launcherType,
      launcherId: query.launcherId,
      messages: messages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: m.tool_calls ?? null, toolCallId: m.tool_call_id ?? null })),
      doneAttempt: done?.attempt ?? null,
      doneSeq: done?.seq ?? null,
      doneEvent: done?.event ? storableEventBody(done.event) : null,
    });
  }

  /**
   * One statement for any number of turns (of different queries and conversations: the batcher keeps
   * turns of one conversation apart, so each turn's base sequence number is read before any of the
   * statement's inserts). Returns, per turn, whether it was appended.
   */
  private async writeTurns(turns: TurnRow[]): Promise<boolean[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `WITH input AS (
        SELECT * FROM jsonb_to_recordset($1::jsonb) AS t("queryId" text, "conversationId" text, "botId" text, "launcherType" text,
          "launcherId" text, "messages" jsonb, "doneAttempt" int, "doneSeq" int, "doneEvent" jsonb)
      ), marked AS (
        INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "receivedAt", "status", "finishedAt", "doneAttempt", "doneSeq", "doneEvent")
        SELECT "queryId", "botId", "launcherType", "launcherId", now(), 'succeeded', now(), "doneAttempt", "doneSeq", "doneEvent" FROM input
        ON CONFLICT ("id") DO UPDATE SET "status" = 'succeeded', "finishedAt" = now(), "error" = NULL,
          "doneAttempt" = EXCLUDED."doneAttempt", "doneSeq" = EXCLUDED."doneSeq", "doneEvent" = EXCLUDED."doneEvent"
        WHERE "QueryRecord"."status" <> 'succeeded'
        RETURNING "id"
      ), appended AS (
        SELECT i.* FROM input i JOIN marked ON marked."id" = i."queryId"
      ), base AS (
        SELECT a."queryId", COALESCE((SELECT MAX(cm."seq") FROM "ConversationMessage" cm WHERE cm."conversationId" = a."conversationId"), 0) AS seq
        FROM appended a
      ), touched AS (
        UPDATE "Conversation" SET "updatedAt" = now() WHERE "id" IN (SELECT "conversationId" FROM appended)
      ), inserted AS (
        INSERT INTO "ConversationMessage" ("conversationId", "seq", "role", "content", "toolCalls", "toolCallId")
        SELECT a."conversationId", base.seq + m.ord, m.role, COALESCE(m.content, 'null'::jsonb), m."toolCalls", m."toolCallId"
        FROM appended a JOIN base ON base."queryId" = a."queryId",
          ROWS FROM (jsonb_to_recordset(a."messages") AS ("role" text, "content" jsonb, "toolCalls" jsonb, "toolCallId" text))
          WITH ORDINALITY AS m("role", "content", "toolCalls", "toolCallId", ord)
      )
      SELECT "id" FROM marked`,
      [JSON.stringify(turns)],
    );
    const appended = new Set(rows.map((r) => r.id));
    return turns.map((t) => appended.has(t.queryId));
  }

  /** Starts a new conversation for the chat; returns whether there was one to archive. */
  async reset(chat: ConversationKey): Promise<boolean> {
    const key = chatKey(chat);
    const archived = await this.prisma.conversation.updateMany({ where: { ...key, archivedAt: null }, data: { archivedAt: new Date() } });
    return archived.count > 0;
  }
}

/** One finished turn as the append statement reads it (jsonb_to_recordset). */
interface TurnRow {
  queryId: string;
  conversationId: string;
  botId: string;
  launcherType: string;
  launcherId: string;
  messages: { role: string; content: unknown; toolCalls: unknown; toolCallId: string | null }[];
  doneAttempt: number | null;
  doneSeq: number | null;
  doneEvent: unknown;
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
