import { Inject, Injectable } from '@nestjs/common';
import type { RunnerEvent } from '@conveyor/contracts';
import { INFRA, isDependencyOutage } from '@conveyor/service-kit';
import { KeyedSerial, PermanentError, type ConsumeContext } from '@conveyor/bus';
import { ReplyTimeline, type QueryLog } from '@conveyor/persistence';
import { meter } from '@conveyor/telemetry';
import {
  checkOutput, instantiate, interrupt, isFinalItem, itemQuery, loadBanWords, runStages, unusableReason,
  type NoticeSink, type PipelineDefinition, type PipelineDeps, type RespItem,
} from '@conveyor/pipeline';
import { PlatformOutbound } from './platform.outbound.js';
import { InstanceSettingsSource } from '@conveyor/config-read-model';
import { PluginRuntime } from '@conveyor/service-kit';
import { DEFAULT_LEASE_OPTIONS, ReplyTurns, SessionLeases, StreamedFlag } from '@conveyor/message-state';
import type { DispatcherInfra } from './env.js';

const staleEvents = meter.createCounter('conveyor_dispatch_stale_events', { description: 'Events dropped because a newer attempt of their run exists' });
const sendFailures = meter.createCounter('conveyor_dispatch_send_failures', { description: 'Replies the platform did not accept after all retries' });

/** The item of MessageProcessor an event carries, if any. */
function itemOf(event: RunnerEvent): RespItem | null {
  switch (event.kind) {
    case 'chunk':
      return { kind: 'chunk', text: event.text, isFinal: event.isFinal, hasToolCalls: event.hasToolCalls, toolNames: event.toolNames ?? [], ...(event.attachments ? { attachments: event.attachments } : {}) };
    case 'message':
      return { kind: 'message', message: event.message, ...(event.attachments ? { attachments: event.attachments } : {}) };
    case 'command_reply':
      return { kind: 'command', text: event.text };
    case 'plugin_reply':
      return { kind: 'plugin', chain: event.chain };
    default:
      return null;
  }
}

/**
 * Runs the stages after MessageProcessor once per item the runner (or the orchestrator's command
 * handler) produced, in the session's order, and frees the session when the reply ends.
 */
@Injectable()
export class EventHandler {
  private readonly queryLog: QueryLog;
  /** The delivery of each reply on its query's timeline, one step per reply (not per chunk). */
  private readonly replyTimeline: ReplyTimeline;
  /** One session's replies go out in order; events arrive in stream order, so chaining per session keeps it. */
  private readonly perSession = new KeyedSerial();
  /** The session stays held while the reply streams, and is freed when the reply cannot go out. */
  private readonly turns: ReplyTurns;
  private readonly settings: InstanceSettingsSource;
  private readonly env: DispatcherInfra['env'];

  constructor(
    @Inject(INFRA) private readonly infra: DispatcherInfra,
    private readonly httpBot: PlatformOutbound,
    private readonly plugins: PluginRuntime,
  ) {
    this.env = infra.env;
    this.queryLog = infra.queryLog;
    this.replyTimeline = new ReplyTimeline(infra.queryLog);
    const leases = new SessionLeases(infra.redis, infra.topology.prefix, DEFAULT_LEASE_OPTIONS, infra.keyLayout);
    this.turns = new ReplyTurns(leases, new StreamedFlag(infra.redis, infra.topology.prefix), this.env.SESSION_LEASE_TTL_MS);
    // Only the ban words matter here (commands end in the orchestrator); the command defaults are unused.
    this.settings = new InstanceSettingsSource(infra, { commandEnable: false, commandPrefix: [], banWords: loadBanWords(this.env.CONVEYOR_BAN_WORDS_FILE) });
  }

  async handle(event: RunnerEvent, ctx: ConsumeContext): Promise<void> {
    // Sends inside the scope are parts of this event, ordered and de-duplicated across replicas; the
    // session is freed once the reply's last event is stored (Deliverer's `sessions`, `onReplyEnded`).
    const ref = { queryId: event.queryId, attempt: event.attempt, seq: event.seq, route: event.route, terminal: event.kind === 'done' || event.kind === 'error' || event.last === true };
    // `done` runs no stage and sends nothing itself: only its seal is stored, which ends the reply (a
    // superseded attempt's seal is refused there), so it needs no admission check of its own.
    const work = event.kind === 'done' ? async () => undefined : () => this.deliver(event, ctx.deliveryCount === 1);
    await this.perSession.run(`${event.route.botId}\u0000${event.route.sessionId}`, () => this.httpBot.withReplyRef(ref, work));
    // Outside the session's chain, so its later events keep coming (and coalescing) meanwhile.
    await this.httpBot.delivered(ref);
  }

  private async deliver(event: RunnerEvent, firstDelivery: boolean): Promise<void> {
    if (!(await this.httpBot.admits(event.route, event.queryId, event.attempt, { seq: event.seq, firstDelivery }))) {
      staleEvents.add(1);
      this.infra.logger.info({ queryId: event.queryId, attempt: event.attempt, seq: event.seq }, 'dropped event of a superseded attempt');
      return;
    }
    const bot = await this.infra.config.botPipeline(event.route.botId);
    if (!bot?.ok) {
      await this.turns.abandon(event.route, event.queryId);
      throw new PermanentError(unusableReason(event.route.botId, bot) ?? 'pipeline unavailable');
    }
    const { pipeline } = bot;
    const item = itemOf(event);
    const q = itemQuery(event.queryId, event.route, pipeline, item);
    const deps = await this.deps(event);
    if (item) {
      await runStages(instantiate(pipeline, deps, pipeline.boundary + 1), 0, q, deps);
      // Read only by a later notice of a reply that streams (see noticeSink): a whole reply, or the
      // run's last event, after which nothing of the reply follows, costs no write.
      if (item.kind === 'chunk' && q.streamOutput && event.last !== true) await this.turns.streamed(event.queryId);
      if (!isFinalItem(item)) await this.turns.keep(event.route, event.queryId);
      return;
    }
    if (event.kind === 'error') {
      // MessageProcessor's INTERRUPT after a runner failure: the notice, the failed query, the end of the reply.
      q.currentStage = 'MessageProcessor';
      await checkOutput(q, interrupt({ userNotice: event.userText ?? undefined, errorNotice: event.error }), deps);
    } else if (event.kind === 'notice') {
      await checkOutput(q, interrupt({ userNotice: event.text }), deps);
    } else {
      await this.turns.keep(event.route, event.queryId);
    }
  }

  private async deps(event: RunnerEvent): Promise<PipelineDeps> {
    const { banWords } = await this.settings.current();
    return { logger: this.infra.logger, isOutage: isDependencyOutage, notices: this.noticeSink(event), outbound: this.outbound(event), banWords, plugins: this.plugins.port };
  }

  /** A send of the event's reply, timed onto its query's timeline (a step once the reply's last part went). */
  private async timedSend(event: RunnerEvent, route: RunnerEvent['route'], reply: Parameters<PlatformOutbound['send']>[1]) {
    this.replyTimeline.sending(event.queryId, event.attempt);
    const result = await this.httpBot.send(route, reply);
    this.replyTimeline.sent(event.queryId, event.attempt, route.adapter, reply.isFinal);
    return result;
  }

  /** The outbound port, with failures counted and recorded on the query. */
  private outbound(event: RunnerEvent): PipelineDeps['outbound'] {
    return {
      send: async (route, reply) => {
        const result = await this.timedSend(event, route, reply);
        if (!result.delivered) sendFailures.add(1, { adapter: route.adapter });
        return result;
      },
    };
  }

  /** Notices are whole replies, or chunk updates once the reply streamed; a failure notice ends the reply. */
  private noticeSink(event: RunnerEvent): NoticeSink {
    return {
      userNotice: async (q, message) => {
        const stream = q.streamOutput && (await this.turns.hasStreamed(q.queryId));
        const result = await this.timedSend(event, q.route, { message, isFinal: true, stream });
        if (!result.delivered) {
          sendFailures.add(1, { adapter: q.route.adapter });
          this.infra.logger.warn({ queryId: q.queryId, reason: result.reason }, 'notice not delivered');
        }
      },
      markFailed: async (q, error) => this.queryLog.failed(q.queryId, error),
    };
  }
}

export type { PipelineDefinition };
