import { Inject, Injectable } from '@nestjs/common';
import { storableMessages, type LlmMessage, type RunnerEventBody, type RunRequest } from '@conveyor/contracts';
import { RunEvents } from '@conveyor/message-state';
import { INFRA, isDependencyOutage, PluginRuntime } from '@conveyor/service-kit';
import { RunAttempts } from '@conveyor/message-state';
import { previousAttemptLink, type ConsumeContext } from '@conveyor/bus';
import { filterToolBox, FinalAnswerHold, HUMAN_REQUEST_TOOL, humanRequestToolBox, ImageFetcher, mergeToolBoxes, OpenAIClientPool, pluginToolBox, runLocalAgent, runTelemetry, sandboxTools, takeOutbox, toEventBody, withInbox, UsageTally, userFacingError, withKnowledge, type AgentItem, type AgentOutcome, type ExecRecord, type ToolBox } from '@conveyor/agent';
import { ConversationStore, KnowledgeStore, type DoneEvent, type QueryLog, type RunUsage } from '@conveyor/persistence';
import { meter } from '@conveyor/telemetry';
import { HumanRequests } from '@conveyor/config-read-model';
import { ModelDirectory } from './model-directory.js';
import { McpRegistry } from './mcp-registry.js';
import { ExternalRunners } from './external-runners.js';
import { SandboxAccess } from './sandbox-access.js';
import type { RunnerInfra } from './env.js';

const redeliveries = meter.createCounter('conveyor_runner_redeliveries', { description: 'Runs started again after an earlier delivery did not finish' });
const runsCompleted = meter.createCounter('conveyor_runner_runs', { description: 'Runs finished, by runner and outcome' });

/** How long a history write waits out a database outage before the run ends without it. */
const HISTORY_WRITE_RETRY_MS = 60_000;

/**
 * How long a run's answer waits for the turn's history write so that it can end the reply itself (one
 * event fewer); past it the answer goes out alone and a `done` follows the write.
 */
const ANSWER_WAITS_FOR_HISTORY_MS = 250;

/** Whether the promise settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Sandbox commands of one run shown on its timeline; later ones still run, unlisted. */
const MAX_EXEC_STEPS = 16;

/** One `exec` as a timeline step: the command (credentials masked), its exit code and output size. */
function execStep(e: ExecRecord): { stage: string; at: number; ms: number } {
  const limits = e.limits.length ? `, ${e.limits.join(', ')}` : '';
  return { stage: `exec ${e.command} (exit ${e.exitCode ?? 'none'}, ${e.outputBytes} B out${limits})`, at: e.at, ms: Math.round(e.durationMs) };
}

/** Executes one run request and publishes what it produced as runner events. */
@Injectable()
export class RunHandler {
  private readonly pool = new OpenAIClientPool();
  private readonly conversations: ConversationStore;
  private readonly queryLog: QueryLog;
  private readonly attempts: RunAttempts;
  private readonly images: { source: ImageFetcher; maxImages: number };
  private readonly knowledge: KnowledgeStore;
  private readonly humanRequests: HumanRequests;

  constructor(
    @Inject(INFRA) private readonly infra: RunnerInfra,
    private readonly models: ModelDirectory,
    private readonly mcp: McpRegistry,
    private readonly external: ExternalRunners,
    private readonly sandbox: SandboxAccess,
    private readonly plugins: PluginRuntime,
  ) {
    this.conversations = new ConversationStore(infra.db);
    this.queryLog = infra.queryLog;
    this.attempts = new RunAttempts(infra.redis, infra.topology.prefix);
    this.humanRequests = new HumanRequests(infra.prisma, infra.nc, infra.topology.prefix, infra.logger);
    const { env } = infra;
    this.images = {
      source: new ImageFetcher({
        timeoutMs: env.ATTACHMENT_FETCH_TIMEOUT_MS,
        maxBytes: env.ATTACHMENT_MAX_BYTES,
        maxRedirects: env.ATTACHMENT_MAX_REDIRECTS,
        allowPrivateNetwork: env.ATTACHMENT_ALLOW_PRIVATE_NETWORK,
      }),
      maxImages: env.ATTACHMENT_MAX_IMAGES,
    };
    this.knowledge = new KnowledgeStore(infra.db);
  }

  /**
   * A run's events carry (query, attempt, seq): a run that restarts after its runner died is a new
   * attempt, and the dispatcher drops the older attempt's events.
   */
  events(run: Pick<RunRequest, 'queryId' | 'route'>, attempt: number, firstSeq = 0): RunEvents {
    return new RunEvents(this.infra, run, attempt, 'runner', firstSeq);
  }

  async handle(run: RunRequest, ctx: ConsumeContext): Promise<void> {
    try {
      await this.execute(run, ctx);
    } catch (err) {
      // An infrastructure failure (bus, database) is retried by redelivery; on the last delivery the
      // user is told and the record says why, instead of the run vanishing into the dead letters.
      const maxDeliver = this.infra.topology.consumers.runner.maxDeliver;
      if (ctx.signal.aborted || ctx.deliveryCount < maxDeliver) throw err;
      const error = `run failed on its last delivery (${ctx.deliveryCount} of ${maxDeliver}): ${(err as Error).message}`;
      this.infra.logger.error({ queryId: run.queryId }, error);
      // A fresh attempt number, above every attempt that streamed, so this ending replaces any partial reply.
      const events = this.events(run, await this.attempts.next(run.queryId));
      await events.emit({ kind: 'error', error, userText: userFacingError(run, error) });
      await events.emit({ kind: 'done' });
      this.queryLog.failed(run.queryId, error);
    }
  }

  private async execute(run: RunRequest, ctx: ConsumeContext): Promise<void> {
    const delivery = ctx.deliveryCount;
    const runner = run.runner ?? 'local-agent';
    const finished = delivery > 1 ? await this.queryLog.finished(run.queryId) : null;
    if (finished) {
      // Its runner died after finishing but before the ack: the reply is out, the model need not run
      // again. It may have died before its last event went out, and the reply (and the session) would
      // wait for that event: publish it again under its own number, with the answer it carried (the
      // bus drops it as a duplicate when it did go out, and so does the dispatcher).
      if (finished.done) {
        const events = this.events(run, finished.done.attempt, finished.done.seq);
        // A recorded answer may have gone out early, as an ordinary event, because the history write
        // was slow: a `done` after it ends the reply then (and is dropped when the answer ended it).
        if (finished.done.event) await events.emit(finished.done.event);
        await events.emit({ kind: 'done' });
      }
      this.infra.logger.info({ queryId: run.queryId, delivery, done: finished.done }, 'run already finished; its last event published again, the redelivered copy dropped');
      return;
    }
    const { attempt, previous } = await this.attempts.start(run.queryId, ctx.span.spanContext());
    // The attempt before this one may have run on a replica that died: the link ties the two traces.
    if (previous) ctx.span.addLink(previousAttemptLink(previous));
    ctx.span.setAttributes({ 'conveyor.run.attempt': attempt, 'conveyor.runner': runner });
    this.infra.logger.info({ queryId: run.queryId, attempt, delivery, runner, stream: run.stream }, 'run started');
    if (delivery > 1) {
      redeliveries.add(1, { runner });
      this.infra.logger.warn({ queryId: run.queryId, attempt }, 'run redelivered; starting it again');
      this.queryLog.attempt(run.queryId, attempt);
    }
    const events = this.events(run, attempt);
    const emit = (body: RunnerEventBody) => events.emit(body);
    const answer = new FinalAnswerHold(emit);
    const emitItem = (item: AgentItem) => answer.item(toEventBody(item));
    const tally = new UsageTally();
    const startedAt = Date.now();
    const execs: ExecRecord[] = [];
    const outcome = runner === 'local-agent' ? await this.localAgent(run, ctx, emitItem, tally, execs) : await this.externalRunner(run, ctx, emitItem, tally);
    // Written with the run's end (the history append or the failure), never a statement of its own.
    const usage: RunUsage = {
      runner, model: tally.model, modelCalls: tally.calls, inputTokens: tally.inputTokens, outputTokens: tally.outputTokens, cost: tally.cost,
      timing: { stage: `run ${runner}`, at: startedAt, ms: Date.now() - startedAt },
      ...(execs.length ? { steps: execs.map(execStep) } : {}),
    };
    const userTurn = run.messages[run.messages.length - 1];
    runsCompleted.add(1, { runner, outcome: outcome.ok ? 'ok' : 'failed' });
    if (outcome.ok) {
      // The reply ends after the turn is in history (the session's next message must see it). The
      // answer itself ends it, as the last event, when the write is quick; the record keeps it, with
      // the number it gets, for a redelivered copy (see above).
      const held = await this.withOutbox(run, answer.take(), ctx.signal);
      // The whole turn goes to history: assistant messages with their tool calls, tool results, the answer.
      const turn = [userTurn, ...outcome.messages];
      if (!held) {
        await this.saveTurn(run, turn, events.next(), usage);
        await emit({ kind: 'done' });
        return;
      }
      const last = { ...held, last: true as const };
      const written = this.saveTurn(run, turn, { ...events.next(), event: last }, usage);
      if (await settlesWithin(written, ANSWER_WAITS_FOR_HISTORY_MS)) {
        await emit(last);
        return;
      }
      // A slow write (an outage is waited out for up to a minute) must not keep the user waiting:
      // the answer goes now, and `done` ends the reply once the turn is in history.
      await emit(held);
      await written;
      await emit({ kind: 'done' });
      return;
    }
    await answer.release();
    await emit({ kind: 'error', error: outcome.error, userText: outcome.userText });
    // Recorded with the query's end: the number the last event gets (see the redelivery above).
    this.queryLog.failed(run.queryId, outcome.error, events.next(), usage);
    await emit({ kind: 'done' });
  }

  /**
   * Writes the finished turn to history. The answer is already out: running the model again because
   * the write failed would only send it again, so a write that fails for good is logged and recorded on
   * the query, and the run still ends. A database outage is waited out (bounded) first.
   */
  private async saveTurn(run: RunRequest, turn: LlmMessage[], done: DoneEvent, usage: RunUsage): Promise<void> {
    const query = { id: run.queryId, botId: run.route.botId, launcherType: run.route.launcherType, launcherId: run.route.launcherId };
    const deadline = Date.now() + HISTORY_WRITE_RETRY_MS;
    for (let pause = 200; ; pause = Math.min(pause * 2, 2_000)) {
      try {
        await this.conversations.completeTurn(query, run.conversationId, storableMessages(turn), done, usage);
        return;
      } catch (err) {
        if (isDependencyOutage(err) && Date.now() + pause < deadline) {
          await new Promise((resolve) => setTimeout(resolve, pause));
          continue;
        }
        const error = `turn not written to history: ${(err as Error).message}`;
        this.infra.logger.error({ queryId: run.queryId, conversationId: run.conversationId, err }, error);
        this.queryLog.failed(run.queryId, error, done, usage);
        return;
      }
    }
  }

  close(): Promise<void> {
    return this.images.source.close();
  }

  /**
   * The files the agent left in its outbox, on the answer (LangBot appends them to the final
   * assistant message). A sandbox that cannot be reached costs the files, never the answer.
   */
  private async withOutbox(run: RunRequest, held: RunnerEventBody | null, signal: AbortSignal): Promise<RunnerEventBody | null> {
    if (!run.sandbox || !held || (held.kind !== 'chunk' && held.kind !== 'message')) return held;
    try {
      const attachments = await takeOutbox(this.sandbox.client, run.sandbox, run.queryId, signal);
      return attachments.length ? { ...held, attachments } : held;
    } catch (err) {
      this.infra.logger.warn({ queryId: run.queryId, err: (err as Error).message }, 'outbox files not sent: the sandbox could not be read');
      return held;
    }
  }

  private async localAgent(run: RunRequest, ctx: ConsumeContext, emit: (item: AgentItem) => Promise<unknown>, usage: UsageTally, execs: ExecRecord[]): Promise<AgentOutcome> {
    const [models, mcpTools, sandbox, knowledgeMessages] = await Promise.all([
      this.models.resolve(run.model),
      this.mcp.toolBox(run.tools),
      run.sandbox
        ? sandboxTools({ port: this.sandbox.client, binding: run.sandbox, queryId: run.queryId, skills: this.sandbox, onExec: (e) => execs.length < MAX_EXEC_STEPS && execs.push(e) })
        : undefined,
      // The retrieved context goes to the model only: history keeps the user's own words (the run's user turn).
      run.knowledge
        ? withKnowledge(run, {
          source: this.knowledge, model: (id) => this.models.find(id), pool: this.pool, logger: this.infra.logger, signal: ctx.signal, telemetry: runTelemetry(run, false),
          pluginRetriever: async (kb, query) => (await this.plugins.host.callRetriever(kb.retriever.plugin, {
            queryId: run.queryId, botId: run.route.botId, pipelineId: run.pipelineId, retriever: kb.retriever.name, knowledgeBaseId: kb.id, query, topK: kb.topK,
          })).chunks.map((c) => c.text),
        })
        : run.messages,
    ]);
    let tools: ToolBox = mcpTools;
    let messages = knowledgeMessages;
    if (sandbox && run.sandbox) {
      // LangBot's order: native sandbox tools first; its guidance as a system message just before the user's turn.
      const own = run.tools && !run.tools.enableAllTools ? filterToolBox(sandbox.box, run.tools.tools) : sandbox.box;
      tools = mergeToolBoxes(own, mcpTools);
    }
    // Then the bound plugins' tools, under names no other tool of the run has.
    const taken = new Set(tools.definitions().map((d) => d.function.name));
    const pluginTools = pluginToolBox(this.plugins.host, { binding: run.tools?.plugins ?? 'all', taken, run: { queryId: run.queryId, botId: run.route.botId, pipelineId: run.pipelineId }, logger: this.infra.logger });
    const offeredPluginTools = run.tools && !run.tools.enableAllTools ? filterToolBox(pluginTools, run.tools.tools) : pluginTools;
    if (offeredPluginTools.definitions().length) tools = mergeToolBoxes(tools, offeredPluginTools);
    // The bot lets the model ask for a person: a tool of its own, whatever the run's tool binding. Its
    // settings (the webhook) are read only when the model calls it.
    if (run.humanRequestTool && !taken.has(HUMAN_REQUEST_TOOL)) {
      const chat = { botId: run.route.botId, launcherType: run.route.launcherType, launcherId: run.route.launcherId };
      tools = mergeToolBoxes(tools, humanRequestToolBox(async (reason) => {
        const settings = (await this.infra.config.botPipeline(run.route.botId))?.humanHandoff;
        // Turned off since the run started: the model is told, as of any tool that failed.
        if (!settings) throw new Error('requests for a person are turned off for this bot');
        return this.humanRequests.request({ chat, via: 'tool', reason, queryId: run.queryId, settings });
      }));
    }
    if (sandbox && run.sandbox) {
      const turn = await withInbox(this.sandbox.client, run.sandbox, run.queryId, messages[messages.length - 1]!, this.images.source, ctx.signal);
      messages = [...messages.slice(0, -1), { role: 'system', content: sandbox.guidance }, turn];
    }
    return runLocalAgent({ ...run, messages }, models, { pool: this.pool, logger: this.infra.logger, signal: ctx.signal, tools, images: this.images, captureContent: this.infra.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, usage, emit: async (i) => void (await emit(i)) });
  }

  private async externalRunner(run: RunRequest, ctx: ConsumeContext, emit: (item: AgentItem) => Promise<unknown>, tally: UsageTally): Promise<AgentOutcome | { ok: true; messages: LlmMessage[] }> {
    try {
      const result = await this.external.run(run, async (i) => void (await emit(i)), ctx.signal, this.images);
      // The tokens the service reported (Dify, Coze, DashScope); its models have no prices here, so no cost.
      if (result.usage) {
        tally.inputTokens += result.usage.inputTokens;
        tally.outputTokens += result.usage.outputTokens;
      }
      return { ok: true, messages: [{ role: 'assistant', content: result.text }] };
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const message = `${run.runner} failed: ${(err as Error).message}`;
      this.infra.logger.error({ queryId: run.queryId, err: message }, message);
      return { ok: false, error: message, userText: userFacingError(run, message) };
    }
  }
}
