import type { NatsConnection } from '@nats-io/transport-node';
import { topology, type HumanHandoff, type HumanRequestVia, type TakeoverChat, type TakeoverEvent } from '@conveyor/contracts';
import { publishTakeoverEvent } from '@conveyor/bus';
import { conveyorMetrics, inSpan } from '@conveyor/telemetry';

/** Characters of the user's message or the model's reason kept with a request. */
export const MAX_HUMAN_REQUEST_REASON = 1_000;
/** A webhook call's time limit; it is tried twice, one second apart. */
const WEBHOOK_TIMEOUT_MS = 5_000;
const WEBHOOK_ATTEMPTS = 2;
const WEBHOOK_RETRY_DELAY_MS = 1_000;

/** Where waiting chats are stored (Prisma's `humanRequest` delegate has this method). */
export interface HumanRequestRows {
  humanRequest: {
    createMany(args: { data: Array<{ botId: string; launcherType: string; launcherId: string; via: string; reason: string; requestedAt: Date }>; skipDuplicates: true }): Promise<{ count: number }>;
  };
}

export interface HumanRequestLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What the operators' webhook receives as JSON for each chat that starts waiting. */
export interface HumanRequestNotice {
  event: 'human_requested';
  botId: string;
  launcherType: 'person' | 'group';
  launcherId: string;
  via: HumanRequestVia;
  reason: string;
  requestedAt: string;
  queryId: string;
}

export interface HumanRequestInput {
  chat: TakeoverChat;
  via: HumanRequestVia;
  reason: string;
  queryId: string;
  settings: HumanHandoff;
}

/**
 * Records that a chat asked for a person (its keyword, or the model's `request_human` tool), once
 * per waiting chat: the first request stores a row, announces `requested` to every admin replica
 * (the console's badge and live list) and POSTs the bot's webhook; another request while the chat
 * still waits changes nothing, so a user repeating the keyword notifies no one twice. The webhook is
 * called after the record, off the message's path, and its failure is logged and counted, never
 * the message's.
 */
export class HumanRequests {
  constructor(
    private readonly prisma: HumanRequestRows,
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly logger: HumanRequestLogger,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Resolves once the request is stored and announced (the webhook is still on its way then). Returns whether the chat started waiting now. */
  async request(input: HumanRequestInput): Promise<boolean> {
    const { chat, via, settings } = input;
    const reason = input.reason.slice(0, MAX_HUMAN_REQUEST_REASON);
    const at = this.now();
    const { count } = await this.prisma.humanRequest.createMany({ data: [{ ...chat, via, reason, requestedAt: at }], skipDuplicates: true });
    if (count === 0) {
      this.logger.info({ queryId: input.queryId, chat, via }, 'human requested again; the chat already waits for an operator');
      return false;
    }
    const event: TakeoverEvent = { v: 1, kind: 'requested', chat, operator: 'bot', at: at.toISOString(), via, text: reason };
    // Stored first: an admin replica that misses the event still lists the chat (it reads the rows).
    await publishTakeoverEvent(this.nc, topology(this.prefix).subjects.takeoverEvents, event).catch((err: unknown) =>
      this.logger.warn({ queryId: input.queryId, err: (err as Error).message }, 'human request not announced; the console lists it from Postgres'));
    this.logger.info({ queryId: input.queryId, chat, via }, 'human requested; the chat waits for an operator');
    const notice: HumanRequestNotice = { event: 'human_requested', ...chat, via, reason, requestedAt: event.at, queryId: input.queryId };
    if (settings.webhookUrl) void this.notify(settings.webhookUrl, notice);
    else conveyorMetrics.humanRequests().add(1, { via, webhook: 'none' });
    return true;
  }

  private async notify(url: string, notice: HumanRequestNotice): Promise<void> {
    // The URL may carry a token in its query: only its origin is logged.
    const target = new URL(url).origin;
    const failure = await inSpan('human_request webhook', { 'url.full': target, 'conveyor.bot.id': notice.botId }, async () => {
      let last = '';
      for (let attempt = 1; attempt <= WEBHOOK_ATTEMPTS; attempt += 1) {
        try {
          // fetch is instrumented: each attempt is a client span whose traceparent goes with it.
          const res = await this.fetchImpl(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(notice), signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS), redirect: 'error' });
          await res.body?.cancel();
          if (res.ok) return null;
          last = `HTTP ${res.status}`;
          // A 4xx is the receiver's answer to this notice; asking again would get the same.
          if (res.status < 500 && res.status !== 429) break;
        } catch (err) {
          last = (err as Error).name === 'TimeoutError' ? `no answer in ${WEBHOOK_TIMEOUT_MS} ms` : (err as Error).message;
        }
        if (attempt < WEBHOOK_ATTEMPTS) await new Promise((r) => setTimeout(r, WEBHOOK_RETRY_DELAY_MS));
      }
      return last;
    }).catch((err: unknown) => (err as Error).message);
    conveyorMetrics.humanRequests().add(1, { via: notice.via, webhook: failure === null ? 'sent' : 'failed' });
    if (failure !== null) this.logger.warn({ queryId: notice.queryId, botId: notice.botId, webhook: target, reason: failure }, 'human request webhook not taken; operators still see the chat waiting in the console');
  }
}
