import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { LIMITS, messageText, type LlmMessage, type RunRequest } from '@conveyor/contracts';
import { tracer } from '@conveyor/telemetry';
import type { OpenAIClientPool } from './client-pool.js';
import { AllModelsFailedError, completeWithFallback, NoModelConfiguredError, streamWithFallback, toolsFor } from './fallback.js';
import { complete, streamChat, type ToolDefinition } from './llm-call.js';
import { agentMetrics } from './metrics.js';
import type { ResolvedModel } from './model.js';
import type { UsageTally } from './usage.js';
import { SequenceCounter, StreamAccumulator, type StreamDelta } from './stream-accumulator.js';
import { emptyToolBox, executeToolCall, type ToolBox } from './tools.js';
import { inlineImages, type ImageSource } from './attachments/inline-images.js';
import { contextSpanAttributes, errorType, sessionIdOf, type GenAiCallContext } from './genai-semconv.js';
import { genAiProviderNameOf } from './providers/index.js';

/** What the agent yields, in order; the runner turns each into one bus event. */
export type AgentItem =
  /** `toolNames`: the tools the round calls, on the round's final chunk (empty otherwise). */
  | { kind: 'chunk'; text: string; isFinal: boolean; hasToolCalls: boolean; toolNames: string[]; sequence: number }
  | { kind: 'message'; message: LlmMessage }
  | { kind: 'tool_result'; toolCallId: string; name: string; content: string };

export interface AgentLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface AgentDeps {
  pool: OpenAIClientPool;
  logger: AgentLogger;
  /** Awaited before the loop goes on, so a slow consumer slows the model reading, not memory. */
  emit(item: AgentItem): Promise<void>;
  tools?: ToolBox;
  signal?: AbortSignal;
  /** LIMITS.toolRounds unless a test lowers it. */
  maxToolRounds?: number;
  /** Where image URLs are read before the model call; without it image parts go to the model as they are. */
  images?: { source: ImageSource; maxImages: number };
  /** Record prompts and answers on the model call spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
  captureContent?: boolean;
  /** Sums the run's model calls and tokens for the query log. */
  usage?: UsageTally;
}

export interface AgentInput {
  messages: LlmMessage[];
  stream: boolean;
  removeThink: boolean;
  queryId?: string;
  /** Who the run serves, on every model call's span and metrics. */
  telemetry?: GenAiCallContext;
}

export interface AgentTurn {
  /** The model that answered; it served every round. */
  model: ResolvedModel;
  /** What the turn added after the user message: assistant messages (with tool calls), tool results, the answer. */
  messages: LlmMessage[];
  toolRounds: number;
  capped: boolean;
}

/** The tool message that answers calls left open when the round cap stops the loop (the API requires one per call). */
export const CAP_TOOL_MESSAGE = `err: tool round limit (${LIMITS.toolRounds}) reached; answer with what you have, without tools`;

/**
 * LangBot's local-agent loop: a model round, then while the model asks for tools, run them in
 * order and ask the same model again. Unlike LangBot, at the round cap the model is asked once more
 * with tools disabled, so the user still gets an answer.
 */
export async function runAgentLoop(models: ResolvedModel[], input: AgentInput, deps: AgentDeps): Promise<AgentTurn> {
  const box = deps.tools ?? emptyToolBox;
  const definitions = box.definitions();
  const maxRounds = deps.maxToolRounds ?? LIMITS.toolRounds;
  const sequence = new SequenceCounter();
  const req = [...input.messages];
  const added: LlmMessage[] = [];
  const push = (m: LlmMessage) => {
    req.push(m);
    added.push(m);
  };

  const round0 = await modelRound(models, req, definitions, 0);
  const model = round0.model;
  push(round0.message);
  let pending = round0.message.tool_calls ?? [];
  let rounds = 0;
  let capped = false;
  while (pending.length > 0) {
    rounds++;
    if (rounds > maxRounds) {
      capped = true;
      agentMetrics.toolRoundCapHit.add(1, { model: model.id });
      deps.logger.warn({ queryId: input.queryId, rounds: maxRounds, model: model.id }, `tool round limit reached (${maxRounds}); asking the model once more without tools`);
      for (const call of pending) push({ role: 'tool', tool_call_id: call.id, content: CAP_TOOL_MESSAGE });
      push((await modelRound([model], req, undefined, rounds)).message);
      break;
    }
    for (const call of pending) {
      const result = await executeToolCall(box, call, deps.signal, { captureContent: input.telemetry?.captureContent === true });
      await deps.emit({ kind: 'tool_result', toolCallId: call.id, name: call.function.name, content: typeof result.content === 'string' ? result.content : messageText(result) });
      push(result);
    }
    const next = await modelRound([model], req, definitions, rounds);
    push(next.message);
    pending = next.message.tool_calls ?? [];
  }
  agentMetrics.toolRounds.record(Math.min(rounds, maxRounds), { model: model.id });
  return { model, messages: added, toolRounds: Math.min(rounds, maxRounds), capped };

  /** Round 0 may fall back across models; later rounds use the committed model only. */
  async function modelRound(candidates: ResolvedModel[], messages: LlmMessage[], tools: ToolDefinition[] | undefined, round: number) {
    const common = { removeThink: input.removeThink, signal: deps.signal, telemetry: input.telemetry, usage: deps.usage };
    const onFallback = (m: ResolvedModel, err: Error) =>
      deps.logger.warn({ queryId: input.queryId, model: m.id, err: err.message }, 'model call failed; trying the next model');
    if (!input.stream) {
      const r = round === 0
        ? await completeWithFallback(deps.pool, candidates, messages, { ...common, tools, onFallback })
        : { model: candidates[0], ...(await complete(deps.pool, candidates[0], messages, { ...common, tools: toolsFor(candidates[0], tools) })) };
      await deps.emit({ kind: 'message', message: r.message });
      return { model: r.model, message: r.message };
    }
    let chosen: ResolvedModel;
    let deltas: AsyncIterable<StreamDelta>;
    if (round === 0) ({ model: chosen, deltas } = await streamWithFallback(deps.pool, candidates, messages, { ...common, tools, onFallback }));
    else {
      chosen = candidates[0];
      deltas = streamChat(deps.pool, chosen, messages, { ...common, tools: toolsFor(chosen, tools) });
    }
    const acc = new StreamAccumulator({ removeThink: input.removeThink, sequence });
    const emitSnapshot = async (s: ReturnType<StreamAccumulator['finish']>) => {
      if (s) await deps.emit({ kind: 'chunk', text: s.text, isFinal: s.isFinal, hasToolCalls: s.toolCalls.length > 0, toolNames: s.toolCalls.map((c) => c.function.name), sequence: s.sequence });
    };
    // The final snapshot (made when a finish reason arrives) waits for the stream's end: a stream can
    // still fail after its finish reason, and the failure notice then ends the reply, so a final chunk
    // already sent would make two.
    let final: ReturnType<StreamAccumulator['finish']> = null;
    for await (const d of deltas) {
      const s = acc.add(d);
      if (s?.isFinal) final = s;
      else await emitSnapshot(s);
    }
    await emitSnapshot(final ?? acc.finish());
    return { model: chosen, message: acc.message() };
  }
}

export type AgentOutcome =
  | ({ ok: true } & AgentTurn)
  | { ok: false; error: string; userText: string | null };

/** What the user sees for a failure, per `output.misc.exception-handling`. */
export function userFacingError(run: Pick<RunRequest, 'exceptionHandling' | 'failureHint'>, error: string): string | null {
  switch (run.exceptionHandling) {
    case 'show-error':
      return error;
    case 'hide':
      return null;
    default:
      return run.failureHint;
  }
}

/** The identifiers a run's model calls carry (session, user, conversation, bot, pipeline). */
export function runTelemetry(run: RunRequest, captureContent: boolean): GenAiCallContext {
  return {
    botId: run.route.botId,
    pipelineId: run.pipelineId,
    conversationId: run.conversationId,
    sessionId: sessionIdOf(run.route.botId, run.route.launcherType, run.route.launcherId),
    userId: run.route.senderId || undefined,
    captureContent,
  };
}

/**
 * The loop for one run request; a failure becomes an outcome with the user's text, an abort stays an
 * exception. The whole run is an `invoke_agent local-agent` span (in process, so INTERNAL) around its
 * model and tool calls, as the GenAI conventions shape an agent's trace.
 */
export async function runLocalAgent(run: RunRequest, models: ResolvedModel[], deps: AgentDeps): Promise<AgentOutcome> {
  const telemetry = runTelemetry(run, deps.captureContent === true);
  const primary = models[0];
  const span = tracer.startSpan('invoke_agent local-agent', {
    kind: SpanKind.INTERNAL,
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'local-agent',
      ...(primary ? { 'gen_ai.provider.name': genAiProviderNameOf(primary), 'gen_ai.request.model': primary.modelId } : {}),
      ...contextSpanAttributes(telemetry),
      'conveyor.query_id': run.queryId,
    },
  });
  const fail = (err: unknown, message: string) => {
    span.setAttribute('error.type', errorType(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  };
  try {
    return await context.with(trace.setSpan(context.active(), span), async (): Promise<AgentOutcome> => {
      // Read right before the model call, in the runner: the bus carries the URL, never megabytes of
      // base64, and the turn written to history keeps the URL too.
      const messages = deps.images
        ? await inlineImages(run.messages, { ...deps.images, logger: deps.logger, queryId: run.queryId, signal: deps.signal })
        : run.messages;
      try {
        const turn = await runAgentLoop(models, { messages, stream: run.stream, removeThink: run.removeThink ?? false, queryId: run.queryId, telemetry }, deps);
        // The model that answered, when a fallback did.
        span.setAttributes({ 'gen_ai.provider.name': genAiProviderNameOf(turn.model), 'gen_ai.request.model': turn.model.modelId });
        return { ok: true, ...turn };
      } catch (err) {
        if (deps.signal?.aborted) throw err;
        const message =
          err instanceof NoModelConfiguredError || err instanceof AllModelsFailedError ? err.message : `model call failed: ${(err as Error).message}`;
        deps.logger.error({ err: message, queryId: run.queryId }, message);
        fail(err, message);
        return { ok: false, error: message, userText: userFacingError(run, message) };
      }
    });
  } catch (err) {
    fail(err, (err as Error)?.message ?? String(err));
    throw err;
  } finally {
    span.end();
  }
}
