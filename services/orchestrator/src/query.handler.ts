import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LIMITS, QueryEnvelope, replyEventGapMs, type HumanHandoff } from '@conveyor/contracts';
import { duplicateClient, INFRA, isDependencyOutage } from '@conveyor/service-kit';
import { PermanentError, RetryableError, type ConsumeContext } from '@conveyor/bus';
import {
  admissionRateWindow, aggregationSettings, emitMessageReceived, instantiate, loadBanWords, mergeEnvelopes, messageReceivedListened, newQuery, runBeforeTurn, runStages,
  timedStages, unusableReason, type HumanRequestPort, type StageTime, type ModelInfoPort, type PipelineDefinition, type PipelineDeps, type PipelineQuery,
} from '@conveyor/pipeline';
import { QueryTurns, RedisFixedWindow, RunEvents, SessionLeases, throttledHolderCheck, TurnWakeups, type QueryTurnRequest, type TurnControl, type TurnEnd } from '@conveyor/message-state';
import { activeTrace, ConversationStore, type QueryLog } from '@conveyor/persistence';
import { conveyorMetrics, inSpan } from '@conveyor/telemetry';
import { InstanceSettingsSource } from '@conveyor/config-read-model';
import { PluginRuntime } from '@conveyor/service-kit';
import { commandPort, handoffPort, historyPort, leasePort, modelInfoPort, noticeSink } from './ports.js';
import { forwardItems } from './forward-stage.js';
import { checkPipelineShards, type OrchestratorInfra } from './env.js';
import { Takeovers } from './takeovers.provider.js';

/** Starts the de-duplication id of a message published again to keep its deliveries (`requeue`). */
const REQUEUED_ID_PREFIX = 'wait:';
/** How long after it arrived a message may keep waiting for its session's turn. */
const MAX_SESSION_WAIT_MS = 3_600_000;
/** Past a reply's gap bound, a live holder's reply has ended. */
const STALE_HOLDER_MARGIN_MS = 5_000;
/** How often one process asks Postgres about one holder. */
const HOLDER_CHECK_EVERY_MS = 5_000;
/** Envelopes kept for aggregation per session; past that a message runs on its own. */
const MAX_STASHED_PER_SESSION = LIMITS.aggregatedMessages * 2;

/**
 * Runs a query through the stages before MessageProcessor and MessageProcessor itself, in its
 * session's turn. A chat hands off to the runner and keeps the session lease (the dispatcher frees it
 * with the final item); anything that ends here frees it here.
 */
@Injectable()
export class QueryHandler implements OnModuleInit, OnApplicationShutdown {
  private readonly conversations: ConversationStore;
  private readonly wakeups: TurnWakeups;
  private readonly turns: QueryTurns;
  private readonly queryLog: QueryLog;
  private readonly leases: SessionLeases;
  private readonly settings: InstanceSettingsSource;
  private readonly models: ModelInfoPort;
  private readonly env: OrchestratorInfra['env'];

  constructor(
    @Inject(INFRA) private readonly infra: OrchestratorInfra,
    private readonly plugins: PluginRuntime,
    private readonly takeovers: Takeovers,
  ) {
    this.env = infra.env;
    this.conversations = new ConversationStore(infra.db);
    this.queryLog = infra.queryLog;
    checkPipelineShards(this.env);
    this.leases = new SessionLeases(infra.redis, infra.topology.prefix, {
      ttlMs: this.env.SESSION_LEASE_TTL_MS,
      settleMs: this.env.SESSION_ORDER_SETTLE_MS,
      pipelineCap: this.env.PIPELINE_CONCURRENCY,
      staleMs: Math.max(60_000, this.env.SESSION_WAIT_HOLD_MS * 3),
    }, infra.keyLayout);
    this.wakeups = new TurnWakeups(duplicateClient(infra.redis), infra.topology.prefix, { layout: infra.keyLayout });
    // A holder whose run ended in Postgres longer ago than a reply's gap bound has had its reply sent
    // (or given up): a lease Redis still shows for it came back with a failover's lost writes.
    const holders = throttledHolderCheck(
      (holder) => this.queryLog.runEndedBefore(holder, replyEventGapMs(infra.topology) + STALE_HOLDER_MARGIN_MS),
      HOLDER_CHECK_EVERY_MS,
      (holder) => this.infra.logger.warn({ queryId: holder }, 'a session was still held by a query whose run ended long ago (Redis lost its release); its turn is ended'),
    );
    const rateWindows = new RedisFixedWindow(infra.redis, infra.topology.prefix, infra.keyLayout);
    this.turns = new QueryTurns(this.leases, this.wakeups, rateWindows, {
      holdMs: this.env.SESSION_WAIT_HOLD_MS,
      refreshEveryMs: this.env.SESSION_LEASE_TTL_MS / 3,
      onStepFailed: (step, queryId, err) => this.infra.logger.warn({ err, queryId, step }, 'a session step failed; the turn went on without it'),
    }, holders);
    this.settings = new InstanceSettingsSource(infra, { commandEnable: this.env.COMMAND_ENABLE, commandPrefix: this.env.COMMAND_PREFIX, banWords: loadBanWords(this.env.CONVEYOR_BAN_WORDS_FILE) });
    this.models = modelInfoPort(infra);
  }

  onModuleInit(): void {
    // Without the subscription waiting queries ask again on their own, only later.
    this.wakeups.start().catch((err: unknown) => this.infra.logger.warn({ err }, 'could not subscribe to freed sessions; waiting queries will poll'));
  }

  onApplicationShutdown(): void {
    this.wakeups.close();
  }

  /**
   * A message waiting for its session's turn goes back to the bus after each hold, and every return
   * spends one of its deliveries; a reply longer than five holds would dead-letter the session's next
   * message. Before its last delivery it is published again as a fresh message instead (its place in the
   * session queue is its first stream sequence, kept), for up to MAX_SESSION_WAIT_MS after it arrived.
   */
  private mayWaitAgain(envelope: QueryEnvelope, ctx: ConsumeContext): boolean {
    const lastDeliveries = ctx.deliveryCount >= this.infra.topology.consumers.orchestrator.maxDeliver - 1;
    return lastDeliveries && Date.now() - Date.parse(envelope.receivedAt) < MAX_SESSION_WAIT_MS;
  }

  private async requeue(envelope: QueryEnvelope, ctx: ConsumeContext): Promise<void> {
    await this.infra.publisher.publish(this.infra.topology.subjects.query(envelope.route.botId), QueryEnvelope, envelope, {
      // One id per source delivery: a retried requeue of the same delivery is stored once.
      msgId: `${REQUEUED_ID_PREFIX}${envelope.queryId}:${ctx.streamSequence}`,
      queryId: envelope.queryId,
      retryForMs: 60_000,
    });
    this.infra.logger.info({ queryId: envelope.queryId, delivery: ctx.deliveryCount }, 'still waiting for the session; published again to keep its deliveries');
  }

  /**
   * With LangBot's message aggregation on: how the session's head waits, and the message's envelope to
   * keep where the replica running the head can merge it; undefined when aggregation is off.
   */
  private aggregation(envelope: QueryEnvelope, def: PipelineDefinition): QueryTurnRequest['aggregation'] {
    const settings = aggregationSettings(def.config);
    if (!settings.enabled) return undefined;
    const json = JSON.stringify(envelope);
    const ownBytes = Buffer.byteLength(json);
    return {
      turn: { delayMs: settings.delayMs, maxMessages: LIMITS.aggregatedMessages, maxBytes: LIMITS.aggregatedBytes, ownBytes },
      // A message too large to share a merged query runs on its own (and ends the run of merged messages before it).
      ...(ownBytes <= LIMITS.aggregatedBytes ? { stash: { envelopeJson: json, maxPending: MAX_STASHED_PER_SESSION } } : {}),
    };
  }

  /**
   * The query that runs: the message itself, or, when aggregation merged the session's following
   * messages into it, one query with their chains (LangBot's merge). The merged messages get no reply
   * of their own; the query log names the query that answered them.
   */
  private async mergeInto(envelope: QueryEnvelope, def: PipelineDefinition, mergedJson: readonly string[]): Promise<QueryEnvelope> {
    if (mergedJson.length === 0) return envelope;
    const rest: QueryEnvelope[] = [];
    for (const json of mergedJson) {
      const parsed = parseEnvelope(json);
      if (parsed) rest.push(parsed);
      // Written by this service from a validated envelope; anything else is a bug worth a line, not a crash loop.
      else this.infra.logger.error({ queryId: envelope.queryId }, 'a merged message could not be read back; it is left out');
    }
    return inSpan('merge messages', { 'conveyor.query.id': envelope.queryId, 'conveyor.aggregation.merged': rest.length }, async () => {
      for (const m of rest) {
        this.queryLog.merged({
          id: m.queryId,
          botId: m.route.botId,
          pipelineId: def.id,
          launcherType: m.route.launcherType,
          launcherId: m.route.launcherId,
          receivedAt: new Date(m.receivedAt),
          ...activeTrace(),
          attempt: 0,
        }, envelope.queryId);
      }
      conveyorMetrics.aggregatedMessages().add(rest.length, { 'conveyor.pipeline.id': def.id });
      this.infra.logger.info({ queryId: envelope.queryId, mergedQueryIds: rest.map((m) => m.queryId) }, 'messages merged into one query');
      return mergeEnvelopes(envelope, rest);
    });
  }

  async handle(envelope: QueryEnvelope, ctx: ConsumeContext): Promise<void> {
    const { route } = envelope;
    const bot = await this.infra.config.botPipeline(route.botId);
    this.queryLog.running({
      id: envelope.queryId,
      botId: route.botId,
      pipelineId: bot?.pipelineId ?? null,
      launcherType: route.launcherType,
      launcherId: route.launcherId,
      receivedAt: new Date(envelope.receivedAt),
      ...activeTrace(),
      attempt: ctx.deliveryCount,
    });
    if (!bot?.ok || !bot.enabled) {
      const reason = unusableReason(route.botId, bot) ?? 'pipeline unavailable';
      this.queryLog.failed(envelope.queryId, reason);
      throw new PermanentError(reason);
    }
    const def = bot.pipeline;
    // The session's record of finished queries lives in Redis; the query log answers when Redis lost it.
    if (ctx.deliveryCount > 1 && (await this.queryLog.isFinished(envelope.queryId))) {
      this.infra.logger.info({ queryId: envelope.queryId, delivery: ctx.deliveryCount }, 'query already answered; dropping the redelivered copy');
      return;
    }
    const aggregation = this.aggregation(envelope, def);
    const timeline: StageTime[] = [];
    const early = aggregation ? undefined : await this.beforeTurn(envelope, def, ctx, timeline);
    if (early?.kind === 'dropped') {
      await this.turns.skip(route, envelope.queryId);
      this.queryLog.succeeded(envelope.queryId);
      this.queryLog.timeline(envelope.queryId, timeline);
      return;
    }
    let events: RunEvents | undefined;
    const outcome = await this.turns.run({
      route,
      queryId: envelope.queryId,
      streamSeq: ctx.streamSequence,
      signal: ctx.signal,
      aggregation,
      rateWindow: admissionRateWindow(def, route),
      ...(this.mayWaitAgain(envelope, ctx) ? { requeue: () => this.requeue(envelope, ctx) } : {}),
      lastDelivery: ctx.deliveryCount >= this.infra.topology.consumers.orchestrator.maxDeliver,
      // No delivery will follow: end the reply that got notices, so it does not hold back the session's next.
      abandoned: async () => {
        if (events && events.emitted > 0) await events.emit({ kind: 'done' });
      },
    }, async (mergedJson, control) => {
      // The query goes on from where the stages before the turn left it (without aggregation nothing is merged into it).
      const resumed = early?.kind === 'go-on' && mergedJson.length === 0 ? early : undefined;
      const q = resumed?.query ?? newQuery(await this.mergeInto(envelope, def, mergedJson), def);
      // Events of a query that ends here (notices, command replies) are numbered by its delivery.
      const queryEvents = (events = new RunEvents(this.infra, q, ctx.deliveryCount, 'orchestrator'));
      try {
        return await this.runStages(q, def, bot.humanHandoff, queryEvents, control, timeline, resumed?.from ?? 0);
      } finally {
        // The stages' timings go with this query's other log entries (one group-committed statement for many queries).
        this.queryLog.timeline(envelope.queryId, timeline);
      }
    });
    if (outcome.kind === 'finished') {
      this.infra.logger.info({ queryId: envelope.queryId, delivery: ctx.deliveryCount }, 'query already answered or merged into another; dropping this copy');
    }
  }

  /**
   * The pipeline's first stages that decide from the message alone (a group's respond rules, access
   * control), run before the query waits for its turn: a message they drop ends at once instead of
   * queueing behind the session's reply in progress. Not when a plugin would be told of the message
   * first (LangBot asks the plugins before any stage, and a plugin may answer in the session's
   * order), nor for a redelivered or requeued copy (an earlier delivery may have decided otherwise:
   * the random respond rule), nor with message aggregation (the rules judge the merged message).
   */
  private async beforeTurn(envelope: QueryEnvelope, def: PipelineDefinition, ctx: ConsumeContext, timeline: StageTime[]): Promise<BeforeTurnRun | undefined> {
    if (ctx.deliveryCount > 1 || ctx.msgId?.startsWith(REQUEUED_ID_PREFIX)) return undefined;
    const query = newQuery(envelope, def);
    const deps = { logger: this.infra.logger, isOutage: isDependencyOutage, plugins: this.plugins.port };
    if (messageReceivedListened(query, deps)) return undefined;
    const decided = await runBeforeTurn(def, query, deps, (stages) => timedStages(stages, (t) => timeline.push(t)));
    if (decided.kind === 'in-turn') {
      this.infra.logger.warn({ queryId: envelope.queryId, reason: decided.reason }, 'the stages before the turn did not decide; the query runs them in its turn');
      timeline.length = 0;
      return undefined;
    }
    return decided.kind === 'dropped' ? decided : { ...decided, query };
  }

  private humanRequestPort(settings: HumanHandoff): HumanRequestPort {
    return { settings, request: async (input) => void (await this.takeovers.humanRequests.request({ ...input, settings })) };
  }

  /** The stages before MessageProcessor and MessageProcessor itself, in the query's turn, from stage `from`. */
  private async runStages(q: PipelineQuery, def: PipelineDefinition, humanHandoff: HumanHandoff | null, events: RunEvents, control: TurnControl, timeline: StageTime[], from: number): Promise<TurnEnd> {
    let handedOff = false;
    const settings = await this.settings.current();
    const deps: PipelineDeps = {
      logger: this.infra.logger,
      isOutage: isDependencyOutage,
      notices: noticeSink(events, this.queryLog),
      history: historyPort(this.conversations),
      models: this.models,
      rateLimiter: control.rateWindow,
      leases: leasePort(this.leases),
      handoff: handoffPort(this.infra, () => {
        handedOff = true;
        control.handedOff();
      }),
      commands: commandPort(this.conversations),
      banWords: settings.banWords,
      commandPrefixes: settings.commandPrefixes,
      commandAdmins: settings.commandAdmins,
      plugins: this.plugins.port,
      takeover: this.takeovers.directory,
      ...(humanHandoff ? { humanRequests: this.humanRequestPort(humanHandoff) } : {}),
    };
    // LangBot's process_query asks the plugins before any stage; prevented, the query ends with no reply.
    if (await emitMessageReceived(q, deps)) {
      this.queryLog.succeeded(q.queryId);
      return 'ended';
    }
    // The stages before `from` ran before the turn: only the rest are built.
    const stages = timedStages([...instantiate(def, deps, from, def.boundary + 1), forwardItems(events)], (t) => timeline.push(t));
    const outcome = await runStages(stages, 0, q, deps);
    if (handedOff) return 'handed-off';
    if (outcome === 'ok') this.queryLog.succeeded(q.queryId);
    if (events.emitted === 0) return 'ended';
    // What went out here (command replies, notices) ends with `done`: the dispatcher frees the
    // session once it has sent them, and the session's next reply is not held behind this one.
    await events.emit({ kind: 'done' });
    return 'replied';
  }
}

/** What the stages before the turn decided: the message was dropped, or its query goes on in its turn from stage `from`. */
type BeforeTurnRun = { kind: 'dropped' } | { kind: 'go-on'; from: number; query: PipelineQuery };

function parseEnvelope(json: string): QueryEnvelope | undefined {
  try {
    const parsed = QueryEnvelope.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
