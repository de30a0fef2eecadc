import { Inject, Injectable } from '@nestjs/common';
import { QueryEnvelope } from '@conveyor/contracts';
import { INFRA, isDependencyOutage, type Infra } from '@conveyor/service-kit';
import { PermanentError, RetryableError, type ConsumeContext } from '@conveyor/bus';
import {
  emitMessageReceived, instantiate, loadBanWords, newQuery, RedisFixedWindow, runStages, SessionLeases, unusableReason, type BanWords, type ModelInfoPort, type PipelineDeps,
} from '@conveyor/pipeline';
import { ConversationStore, type QueryLog } from '@conveyor/persistence';
import { currentTraceId } from '@conveyor/telemetry';
import { BotPipelines, PluginRuntime } from '@conveyor/service-kit';
import { commandPort, handoffPort, historyPort, leasePort, modelInfoPort, noticeSink, QueryEvents } from './ports.js';
import { forwardItems } from './forward-stage.js';
import { waitForTurn } from './session-turn.js';
import { commandPrefixes, type OrchestratorEnv } from './env.js';

/** How long after it arrived a message may keep waiting for its session's turn. */
const MAX_SESSION_WAIT_MS = 3_600_000;

/**
 * Runs a query through the stages before MessageProcessor and MessageProcessor itself, in its
 * session's turn. A chat hands off to the runner and keeps the session lease (the dispatcher frees it
 * with the final item); anything that ends here frees it here.
 */
@Injectable()
export class QueryHandler {
  private readonly conversations: ConversationStore;
  private readonly queryLog: QueryLog;
  private readonly leases: SessionLeases;
  private readonly rateLimiter: RedisFixedWindow;
  private readonly banWords: BanWords;
  private readonly commandPrefixes: string[];
  private readonly models: ModelInfoPort;
  private readonly env: OrchestratorEnv;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly pipelines: BotPipelines,
    private readonly plugins: PluginRuntime,
  ) {
    this.env = infra.env as unknown as OrchestratorEnv;
    this.conversations = new ConversationStore(infra.db);
    this.queryLog = infra.queryLog;
    this.leases = new SessionLeases(infra.redis, infra.topology.prefix, {
      ttlMs: this.env.SESSION_LEASE_TTL_MS,
      settleMs: this.env.SESSION_ORDER_SETTLE_MS,
      pipelineCap: this.env.PIPELINE_CONCURRENCY,
      staleMs: Math.max(60_000, this.env.SESSION_WAIT_HOLD_MS * 3),
    });
    this.rateLimiter = new RedisFixedWindow(infra.redis, infra.topology.prefix);
    this.banWords = loadBanWords(this.env.CONVEYOR_BAN_WORDS_FILE);
    this.commandPrefixes = commandPrefixes(this.env);
    this.models = modelInfoPort(infra);
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
      msgId: `wait:${envelope.queryId}:${ctx.streamSequence}`,
      queryId: envelope.queryId,
      retryForMs: 60_000,
    });
    this.infra.logger.info({ queryId: envelope.queryId, delivery: ctx.deliveryCount }, 'still waiting for the session; published again to keep its deliveries');
  }

  async handle(envelope: QueryEnvelope, ctx: ConsumeContext): Promise<void> {
    const { route } = envelope;
    const bot = await this.pipelines.forBot(route.botId);
    this.queryLog.running({
      id: envelope.queryId,
      botId: route.botId,
      pipelineId: bot?.pipelineId ?? null,
      launcherType: route.launcherType,
      launcherId: route.launcherId,
      receivedAt: new Date(envelope.receivedAt),
      traceId: currentTraceId(),
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
    const turn = await waitForTurn(this.leases, route, envelope.queryId, ctx.streamSequence, this.env.SESSION_WAIT_HOLD_MS, ctx.signal).catch(async (err: unknown) => {
      if (!(err instanceof RetryableError) || !this.mayWaitAgain(envelope, ctx)) throw err;
      await this.requeue(envelope, ctx);
      return 'requeued' as const;
    });
    if (turn === 'requeued') return;
    if (turn === 'finished') {
      this.infra.logger.info({ queryId: envelope.queryId, delivery: ctx.deliveryCount }, 'query already answered; dropping the redelivered copy');
      return;
    }
    const refresh = setInterval(() => void this.leases.extend(route, envelope.queryId).catch(() => undefined), this.env.SESSION_LEASE_TTL_MS / 3);
    let handedOff = false;
    const q = newQuery(envelope, def);
    const events = new QueryEvents(this.infra, q, ctx.deliveryCount);
    try {
      const deps: PipelineDeps = {
        logger: this.infra.logger,
        isOutage: isDependencyOutage,
        notices: noticeSink(events, this.queryLog),
        history: historyPort(this.conversations),
        models: this.models,
        rateLimiter: this.rateLimiter,
        leases: leasePort(this.leases),
        handoff: handoffPort(this.infra, () => (handedOff = true)),
        commands: commandPort(this.conversations),
        banWords: this.banWords,
        commandPrefixes: this.commandPrefixes,
        plugins: this.plugins.port,
      };
      // LangBot's process_query asks the plugins before any stage; prevented, the query ends with no reply.
      if (await emitMessageReceived(q, deps)) {
        await this.leases.finish(route, envelope.queryId);
        this.queryLog.succeeded(envelope.queryId);
        return;
      }
      const stages = [...instantiate(def, deps, 0, def.boundary + 1), forwardItems(events)];
      const outcome = await runStages(stages, 0, q, deps);
      if (handedOff) return;
      if (events.emitted > 0) {
        // What went out here (command replies, notices) ends with `done`: the dispatcher frees the
        // session once it has sent them, and the session's next reply is not held behind this one.
        await events.emit({ kind: 'done' });
      } else {
        await this.leases.finish(route, envelope.queryId);
      }
      if (outcome === 'ok') this.queryLog.succeeded(envelope.queryId);
    } catch (err) {
      // A deferred query (rate-limit wait) keeps its lease and its place; anything else frees the session.
      if (!(err instanceof RetryableError) && !handedOff) await this.leases.release(route, envelope.queryId).catch(() => undefined);
      // No delivery will follow: end the reply that got notices, so it does not hold back the session's next.
      const lastTry = err instanceof PermanentError || ctx.deliveryCount >= this.infra.topology.consumers.orchestrator.maxDeliver;
      if (lastTry && !handedOff && events.emitted > 0) await events.emit({ kind: 'done' }).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(refresh);
    }
  }
}
