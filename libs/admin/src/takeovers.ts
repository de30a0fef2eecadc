// Human takeover through the admin API: an operator takes a chat over (the pipeline then leaves it to
// them), sends it messages as the bot, and hands it back, or it returns after the idle time chosen.
// The state is a Postgres row (it survives restarts); every change is audited and announced on the bus,
// where each orchestrator replica keeps the taken chats in memory and every admin replica shows them live.
// A chat that asked for a person waits (its own row) until an operator takes it over or dismisses it.
import type { AdminApi, DirectSendReply, DirectSendRequest, TakeoverChat, TakeoverEvent } from '@conveyor/contracts';
import type { PrismaClient } from '@conveyor/persistence';
import { recordAudit } from './audit.js';
import type { Principal } from './auth.js';
import { AdminApiError } from './errors.js';

export interface TakeoverPorts {
  /** Announces a change to every replica (orchestrators, admins). */
  announce(event: TakeoverEvent): Promise<void>;
  /** Sends a message to the chat through a dispatcher. */
  send(request: DirectSendRequest): Promise<DirectSendReply>;
  now?: () => Date;
}

type Row = { botId: string; launcherType: string; launcherId: string; operator: string; since: Date; lastOperatorAt: Date; idleMs: number | null };

const chatOf = (c: TakeoverChat) => ({ botId: c.botId, launcherType: c.launcherType, launcherId: c.launcherId });
const where = (c: TakeoverChat) => ({ botId_launcherType_launcherId: chatOf(c) });
const chatName = (c: TakeoverChat) => `${c.botId}/${c.launcherType}:${c.launcherId}`;

export class Takeovers {
  private readonly now: () => Date;

  constructor(private readonly prisma: PrismaClient, private readonly ports: TakeoverPorts) {
    this.now = ports.now ?? (() => new Date());
  }

  /** The chats taken over now (those past their idle time are handed back as they are read). */
  async list(): Promise<AdminApi.TakeoverList> {
    const rows = await this.prisma.sessionTakeover.findMany({ orderBy: { since: 'desc' }, take: 1_000 });
    const live: Row[] = [];
    for (const row of rows) {
      if (this.expired(row)) await this.expire(row);
      else live.push(row);
    }
    return { items: live.map((r) => this.view(r)) };
  }

  async take(actor: Principal, input: AdminApi.TakeoverCreateInput): Promise<AdminApi.Takeover> {
    const chat = chatOf(input);
    if (!(await this.prisma.bot.findUnique({ where: { id: input.botId }, select: { id: true } }))) throw new AdminApiError('not_found', `bot ${JSON.stringify(input.botId)} does not exist`, { field: 'body.botId' });
    const now = this.now();
    const idleMs = input.idleMinutes === null ? null : input.idleMinutes * 60_000;
    const row = await this.prisma.$transaction(async (tx) => {
      const existing = await tx.sessionTakeover.findUnique({ where: where(chat) });
      if (existing && !this.expired(existing) && existing.operator !== actor.actor) {
        throw new AdminApiError('conflict', `${chatName(chat)} is taken over by ${existing.operator}; they hand it back first`, { field: 'body' });
      }
      const saved = await tx.sessionTakeover.upsert({ where: where(chat), create: { ...chat, operator: actor.actor, since: now, lastOperatorAt: now, idleMs }, update: { operator: actor.actor, since: now, lastOperatorAt: now, idleMs } });
      // Taking the chat answers its request for a person, if it made one.
      await tx.humanRequest.deleteMany({ where: chat });
      await recordAudit(tx, { actor: actor.actor, resource: 'session-takeover', resourceId: chatName(chat), action: 'take', changes: idleMs === null ? [] : [`idle ${input.idleMinutes} min`] });
      return saved;
    });
    await this.ports.announce({ v: 1, kind: 'taken', chat, operator: actor.actor, at: row.lastOperatorAt.toISOString(), idleMs });
    return this.view(row);
  }

  /** Sends the operator's text to the chat as the bot; the chat must be taken over (by anyone). */
  async reply(actor: Principal, input: AdminApi.OperatorReplyInput): Promise<AdminApi.Takeover> {
    const chat = chatOf(input);
    const row = await this.prisma.sessionTakeover.findUnique({ where: where(chat) });
    if (!row || this.expired(row)) {
      if (row) await this.expire(row);
      throw new AdminApiError('conflict', `${chatName(chat)} is not taken over; take it over first`, { field: 'body' });
    }
    const sent = await this.ports.send({ v: 1, botId: input.botId, target: { type: input.launcherType, id: input.launcherId }, messageChain: [{ type: 'Plain', text: input.text }], origin: `operator:${actor.actor}` });
    if (!sent.ok) {
      const code = sent.error.code === 'not_found' ? 'not_found' : sent.error.code === 'invalid' ? 'validation_failed' : 'unavailable';
      throw new AdminApiError(code, `the message did not go out: ${sent.error.message}`, { field: 'body' });
    }
    const now = this.now();
    const updated = await this.prisma.$transaction(async (tx) => {
      const saved = await tx.sessionTakeover.update({ where: where(chat), data: { lastOperatorAt: now } });
      await recordAudit(tx, { actor: actor.actor, resource: 'session-takeover', resourceId: chatName(chat), action: 'reply', changes: [`${input.text.length} characters`] });
      return saved;
    });
    await this.ports.announce({ v: 1, kind: 'reply', chat, operator: actor.actor, at: now.toISOString(), text: input.text });
    return this.view(updated);
  }

  async handBack(actor: Principal, chat: TakeoverChat): Promise<void> {
    const { count } = await this.prisma.$transaction(async (tx) => {
      const removed = await tx.sessionTakeover.deleteMany({ where: chatOf(chat) });
      if (removed.count) await recordAudit(tx, { actor: actor.actor, resource: 'session-takeover', resourceId: chatName(chat), action: 'hand-back' });
      return removed;
    });
    if (!count) throw new AdminApiError('not_found', `${chatName(chat)} is not taken over`, { field: 'query' });
    await this.ports.announce({ v: 1, kind: 'returned', chat: chatOf(chat), operator: actor.actor, at: this.now().toISOString() });
  }

  /** The chats waiting for a person, oldest first; their reasons under the message-text rule. */
  async waiting(textShown: boolean): Promise<AdminApi.HumanRequestList> {
    const rows = await this.prisma.humanRequest.findMany({ orderBy: { requestedAt: 'asc' }, take: 1_000 });
    return {
      items: rows.map((r) => ({
        botId: r.botId,
        launcherType: r.launcherType,
        launcherId: r.launcherId,
        via: r.via === 'tool' ? 'tool' : 'keyword',
        reason: textShown ? r.reason : null,
        requestedAt: r.requestedAt.toISOString(),
      })),
    };
  }

  /** Clears a chat's request for a person without taking it over (the operator saw it needs none). */
  async dismiss(actor: Principal, chat: TakeoverChat): Promise<void> {
    const { count } = await this.prisma.$transaction(async (tx) => {
      const removed = await tx.humanRequest.deleteMany({ where: chatOf(chat) });
      if (removed.count) await recordAudit(tx, { actor: actor.actor, resource: 'human-request', resourceId: chatName(chat), action: 'dismiss' });
      return removed;
    });
    if (!count) throw new AdminApiError('not_found', `${chatName(chat)} is not waiting for a person`, { field: 'query' });
    await this.ports.announce({ v: 1, kind: 'dismissed', chat: chatOf(chat), operator: actor.actor, at: this.now().toISOString() });
  }

  private expired(row: Pick<Row, 'lastOperatorAt' | 'idleMs'>): boolean {
    return row.idleMs !== null && this.now().getTime() - row.lastOperatorAt.getTime() >= row.idleMs;
  }

  /** An idle takeover handed back: the row goes, the audit says the idle time did it. */
  private async expire(row: Row): Promise<void> {
    const chat = { botId: row.botId, launcherType: row.launcherType === 'group' ? 'group' as const : 'person' as const, launcherId: row.launcherId };
    const { count } = await this.prisma.$transaction(async (tx) => {
      const removed = await tx.sessionTakeover.deleteMany({ where: { ...chat, lastOperatorAt: row.lastOperatorAt } });
      if (removed.count) await recordAudit(tx, { actor: 'system:idle', resource: 'session-takeover', resourceId: chatName(chat), action: 'hand-back', changes: [`idle ${Math.round((row.idleMs ?? 0) / 60_000)} min`] });
      return removed;
    });
    if (count) await this.ports.announce({ v: 1, kind: 'returned', chat, operator: 'system:idle', at: this.now().toISOString() });
  }

  private view(r: Row): AdminApi.Takeover {
    return {
      botId: r.botId,
      launcherType: r.launcherType,
      launcherId: r.launcherId,
      operator: r.operator,
      since: r.since.toISOString(),
      lastOperatorAt: r.lastOperatorAt.toISOString(),
      returnsAt: r.idleMs === null ? null : new Date(r.lastOperatorAt.getTime() + r.idleMs).toISOString(),
    };
  }
}
