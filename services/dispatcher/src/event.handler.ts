import { Inject, Injectable } from '@nestjs/common';
import { messageText, type MessageChain, type RunnerEvent } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { KeyedSerial, type ConsumeContext } from '@conveyor/bus';
import { QueryLog } from '@conveyor/persistence';
import { meter } from '@conveyor/telemetry';
import { HttpBotOutbound, type OutboundReply } from './http-bot.outbound.js';
import { AttemptGate } from './attempt-gate.js';

const staleEvents = meter.createCounter('conveyor_dispatch_stale_events', { description: 'Events dropped because a newer attempt of their run exists' });
const sendFailures = meter.createCounter('conveyor_dispatch_send_failures', { description: 'Replies the platform did not accept after all retries' });

/** Turns runner events into platform replies. (The downstream stages arrive with issue 3.) */
@Injectable()
export class EventHandler {
  private readonly queryLog: QueryLog;
  /** One session's replies go out in order; events arrive in stream order, so chaining per session keeps it. */
  private readonly perSession = new KeyedSerial();
  private readonly attempts: AttemptGate;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly httpBot: HttpBotOutbound,
  ) {
    this.queryLog = new QueryLog(infra.prisma);
    this.attempts = new AttemptGate(infra.redis, infra.topology.prefix);
  }

  handle(event: RunnerEvent, _ctx: ConsumeContext): Promise<void> {
    return this.perSession.run(`${event.route.botId}\u0000${event.route.sessionId}`, () => this.deliver(event));
  }

  private async deliver(event: RunnerEvent): Promise<void> {
    if (!(await this.attempts.admit(event.queryId, event.attempt))) {
      staleEvents.add(1);
      this.infra.logger.info({ queryId: event.queryId, attempt: event.attempt, seq: event.seq }, 'dropped event of a superseded attempt');
      return;
    }
    const reply = toReply(event);
    if (!reply) return;
    const result = await this.httpBot.send(event.route, reply);
    if (!result.delivered) {
      sendFailures.add(1, { adapter: event.route.adapter });
      this.infra.logger.warn({ queryId: event.queryId, reason: result.reason }, 'reply not delivered');
      await this.queryLog.failed(event.queryId, `reply not delivered: ${result.reason}`);
    }
  }
}

function plain(text: string): MessageChain {
  return [{ type: 'Plain', text }];
}

/** What the user sees for an event, if anything. */
function toReply(event: RunnerEvent): OutboundReply | null {
  switch (event.kind) {
    case 'message':
      return { message: plain(messageText(event.message)), isFinal: true, stream: false };
    case 'chunk':
      return { message: plain(event.text), isFinal: event.isFinal && !event.hasToolCalls, stream: true };
    case 'error':
      return event.userText === null ? null : { message: plain(event.userText), isFinal: true, stream: false };
    case 'notice':
      return { message: plain(event.text), isFinal: true, stream: false };
    default:
      return null;
  }
}
