import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { TakeoverEvent, takeoverKey, topology, type TakeoverChat } from '@conveyor/contracts';

/** The chats one process keeps as taken over; a deployment with more is refused at the 10,001st (logged). */
const MAX_TAKEN = 10_000;
/** Every this often the taken chats are read again from Postgres: a missed event costs at most this. */
const RESYNC_MS = 60_000;

interface Taken {
  lastOperatorAt: number;
  idleMs: number | null;
}

/** Where the taken chats are stored (Prisma's `sessionTakeover` delegate has this method). */
export interface TakeoverRows {
  sessionTakeover: {
    findMany(args: { take: number; select: { botId: true; launcherType: true; launcherId: true; lastOperatorAt: true; idleMs: true } }): Promise<Array<{ botId: string; launcherType: string; launcherId: string; lastOperatorAt: Date; idleMs: number | null }>>;
  };
}

export interface TakeoverLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const decoder = new TextDecoder();

/**
 * Which chats operators have taken over, for the pipeline to leave to them: in memory, kept by the
 * admin's `TakeoverEvent`s as they are published (so every replica honours a takeover at once, with
 * no round trip per message), and read again from Postgres at start and every minute (so a restart or
 * a missed event is healed). A chat whose operator has been silent past its idle time counts as
 * returned, without anyone having to tell.
 */
export class TakeoverDirectory {
  private taken = new Map<string, Taken>();
  /** Events heard while a resync reads Postgres, applied again over what it read (which may predate them). */
  private heardDuringResync: TakeoverEvent[] | null = null;
  private subscription: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: TakeoverRows,
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly logger: TakeoverLogger,
    private readonly now: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    // Subscribed before the first read, so a takeover between the two is not missed.
    this.subscription = this.nc.subscribe(topology(this.prefix).subjects.takeoverEvents, {
      callback: (err, msg) => {
        if (err) return;
        let parsed;
        try {
          parsed = TakeoverEvent.safeParse(JSON.parse(decoder.decode(msg.data)));
        } catch {
          parsed = undefined;
        }
        if (parsed?.success) this.apply(parsed.data);
      },
    });
    await this.nc.flush();
    await this.resync();
    this.timer = setInterval(() => void this.resync().catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, 'takeover resync failed; the next one tries again')), RESYNC_MS);
    this.timer.unref();
  }

  stop(): void {
    this.subscription?.unsubscribe();
    clearInterval(this.timer);
  }

  /** Whether an operator answers this chat now (taken, and not past its idle time). */
  isTakenOver(chat: TakeoverChat): boolean {
    const t = this.taken.get(takeoverKey(chat));
    return t !== undefined && (t.idleMs === null || this.now() - t.lastOperatorAt < t.idleMs);
  }

  apply(e: TakeoverEvent): void {
    this.heardDuringResync?.push(e);
    this.applyTo(this.taken, e);
  }

  private applyTo(taken: Map<string, Taken>, e: TakeoverEvent): void {
    // A chat asking for a person (or that request dismissed) is still the bot's until an operator takes it.
    if (e.kind === 'requested' || e.kind === 'dismissed') return;
    const key = takeoverKey(e.chat);
    const at = Date.parse(e.at);
    if (e.kind === 'returned') {
      if (taken.delete(key)) this.logger.info({ chat: e.chat, operator: e.operator }, 'takeover: chat handed back to the bot');
      return;
    }
    if (e.kind === 'reply') {
      const t = taken.get(key);
      if (t) t.lastOperatorAt = Math.max(t.lastOperatorAt, at);
      return;
    }
    if (!taken.has(key) && taken.size >= MAX_TAKEN) {
      this.logger.warn({ chat: e.chat, taken: taken.size }, 'takeover: too many chats taken over; this one is answered by the bot');
      return;
    }
    taken.set(key, { lastOperatorAt: at, idleMs: e.idleMs ?? null });
    this.logger.info({ chat: e.chat, operator: e.operator, takenAt: e.at }, 'takeover: chat taken over by an operator');
  }

  /** Reads every taken chat from Postgres (bounded) in place of what memory holds. */
  async resync(): Promise<void> {
    this.heardDuringResync = [];
    try {
      const rows = await this.prisma.sessionTakeover.findMany({ take: MAX_TAKEN, select: { botId: true, launcherType: true, launcherId: true, lastOperatorAt: true, idleMs: true } });
      const taken = new Map(rows.flatMap((r) => (r.launcherType === 'person' || r.launcherType === 'group')
        ? [[takeoverKey({ botId: r.botId, launcherType: r.launcherType, launcherId: r.launcherId }), { lastOperatorAt: r.lastOperatorAt.getTime(), idleMs: r.idleMs }] as const]
        : []));
      for (const e of this.heardDuringResync) this.applyTo(taken, e);
      this.taken = taken;
    } finally {
      this.heardDuringResync = null;
    }
  }
}
