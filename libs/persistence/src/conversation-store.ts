import { randomUUID } from 'node:crypto';
import { chatKey, storableEventBody, type ChatKey, type ChatRef, type LlmMessage } from '@conveyor/contracts';
import type { Database } from './client.js';
import { USAGE_RECORD, USAGE_SET, usageColumns, type DoneEvent, type RunUsage, type UsageColumns } from './query-log.js';
import { StatementBatcher } from './statement-batcher.js';
import type { SqlStatements } from './prepared-statements.js';

/** The chat whose conversation is meant; the store keys it with `chatKey`, so the adapter is part of the key. */
export type ConversationKey = ChatRef;

/**
 * Conversation history shared by every replica (LangBot keeps it in process memory). The active
 * conversation of a chat is the one not archived; a reset archives it.
 */
export class ConversationStore {
  private readonly prisma: Database['prisma'];
  private readonly sql: SqlStatements;

  /** Loads, group-committed; a chat appears once per statement. */
  private readonly loads = new StatementBatcher<ActiveLoad, ActiveConversation | null>({
    spanName: 'conversation.load_active',
    runBatch: (chats) => this.loadActive(chats),
    keysOf: (c) => [`${c.botId}\u0000${c.launcherType}\u0000${c.launcherId}`],
  });

  /** Turn writes, group-committed; a query and a conversation each appear once per statement. */
  private readonly turns = new StatementBatcher<TurnRow, boolean>({
    spanName: 'conversation.append_turns',
    runBatch: (turns) => this.writeTurns(turns),
    keysOf: (t) => [`q:${t.queryId}`, `c:${t.conversationId}`],
  });

  constructor(db: Database) {
    this.prisma = db.prisma;
    this.sql = db.statements;
  }

  /**
   * What a run needs of the chat, in one round trip: the active conversation and its newest `limit`
   * messages (oldest first). A missing conversation, or one of another pipeline, is replaced. Loads
   * asked for while another is in flight leave together in one statement (see StatementBatcher).
   */
  async load(chat: ConversationKey, pipelineId: string, limit: number): Promise<{ conversationId: string; history: LlmMessage[] }> {
    const key = chatKey(chat);
    const active = await this.loads.run({ ...key, limit });
    if (active && active.pipelineId === pipelineId) return { conversationId: active.id, history: active.history.map(toLlmMessage) };
    return { conversationId: await this.startConversation(key, pipelineId), history: [] };
  }

  /** Each chat's active conversation with its newest messages, in one statement; null where it has none. */
  private async loadActive(chats: ActiveLoad[]): Promise<(ActiveConversation | null)[]> {
    const { rows } = await this.sql.query<ActiveConversation & { ord: string }>(
      `SELECT k.ord, c."id", c."pipelineId", COALESCE((
         SELECT json_agg(m ORDER BY m."seq") FROM (
           SELECT "seq", "role", "content", "toolCalls", "toolCallId" FROM "ConversationMessage"
           WHERE "conversationId" = c."id" ORDER BY "seq" DESC LIMIT k."limit") m), '[]'::json) AS "history"
       FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS ("botId" text, "launcherType" text, "launcherId" text, "limit" int))
         WITH ORDINALITY AS k("botId", "launcherType", "launcherId", "limit", ord)
       JOIN LATERAL (
         SELECT "id", "pipelineId" FROM "Conversation"
         WHERE "botId" = k."botId" AND "launcherType" = k."launcherType" AND "launcherId" = k."launcherId" AND "archivedAt" IS NULL
         ORDER BY "createdAt" DESC LIMIT 1
       ) c ON true`,
      [JSON.stringify(chats)],
    );
    const found = new Map(rows.map((r) => [Number(r.ord), r]));
    return chats.map((_, i) => found.get(i + 1) ?? null);
  }

  /** Archives the chat's active conversation, if any, and starts a new one of `pipelineId`: one statement. */
  private async startConversation(key: ChatKey, pipelineId: string): Promise<string> {
    const id = randomUUID();
    await this.sql.query(
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
   * another is being written leave together in one statement (see StatementBatcher); a caller still waits
   * for its own turn to be committed, so nothing a reply depends on is deferred.
   */
  completeTurn(
    query: { id: string; botId: string; launcherType: string; launcherId: string },
    conversationId: string,
    messages: LlmMessage[],
    done: DoneEvent | null = null,
    run?: RunUsage,
  ): Promise<boolean> {
    return this.turns.run({
      queryId: query.id,
      conversationId,
      botId: query.botId,
      launcherType: query.launcherType,
      launcherId: query.launcherId,
      messages: messages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: m.tool_calls ?? null, toolCallId: m.tool_call_id ?? null })),
      doneAttempt: done?.attempt ?? null,
      doneSeq: done?.seq ?? null,
      doneEvent: done?.event ? storableEventBody(done.event) : null,
      ...usageColumns(run),
    });
  }

  /**
   * One statement for any number of turns (of different queries and conversations: the batcher keeps
   * turns of one conversation apart, so each turn's base sequence number is read before any of the
   * statement's inserts). Returns, per turn, whether it was appended. The query records are locked in
   * id order, as every statement that writes several of them does (see `updateRecordsInIdOrder` in
   * query-log.ts), and the conversations are found by their primary key (an array of ids, not a join
   * the planner would answer by reading the whole table).
   */
  private async writeTurns(turns: TurnRow[]): Promise<boolean[]> {
    const { rows } = await this.sql.query<{ id: string }>(
      `WITH input AS (
        SELECT * FROM jsonb_to_recordset($1::jsonb) AS t("queryId" text, "conversationId" text, "botId" text, "launcherType" text,
          "launcherId" text, "messages" jsonb, "doneAttempt" int, "doneSeq" int, "doneEvent" jsonb, ${USAGE_RECORD})
      ), marked AS (
        INSERT INTO "QueryRecord" AS q ("id", "botId", "launcherType", "launcherId", "receivedAt", "status", "finishedAt", "doneAttempt", "doneSeq", "doneEvent",
          "runner", "model", "modelCalls", "inputTokens", "outputTokens", "cost", "stages")
        SELECT "queryId", "botId", "launcherType", "launcherId", now(), 'succeeded', now(), "doneAttempt", "doneSeq", "doneEvent",
          "runner", "model", "modelCalls", "inputTokens", "outputTokens", "cost", "stages" FROM input
        ORDER BY "queryId"
        ON CONFLICT ("id") DO UPDATE SET "status" = 'succeeded', "finishedAt" = now(), "error" = NULL,
          "doneAttempt" = EXCLUDED."doneAttempt", "doneSeq" = EXCLUDED."doneSeq", "doneEvent" = EXCLUDED."doneEvent",
          ${USAGE_SET.replaceAll('r."', 'EXCLUDED."')}
        WHERE q."status" <> 'succeeded'
        RETURNING "id"
      ), appended AS (
        SELECT i.* FROM input i JOIN marked ON marked."id" = i."queryId"
      ), base AS (
        SELECT a."queryId", COALESCE((SELECT MAX(cm."seq") FROM "ConversationMessage" cm WHERE cm."conversationId" = a."conversationId"), 0) AS seq
        FROM appended a
      ), touched AS (
        UPDATE "Conversation" SET "updatedAt" = now() WHERE "id" = ANY (ARRAY(SELECT "conversationId" FROM appended))
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

/** One chat whose active conversation is loaded, as the load statement reads it (jsonb_to_recordset). */
interface ActiveLoad extends ChatKey {
  limit: number;
}

interface ActiveConversation {
  id: string;
  pipelineId: string;
  history: MessageRow[];
}

/** One finished turn as the append statement reads it (jsonb_to_recordset). */
interface TurnRow extends UsageColumns {
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
