import { chatKey, RetryableError, type ChatRef } from '@conveyor/contracts';
import { meter } from '@conveyor/telemetry';
import { need } from '../engine/ports.js';
import { CONTINUE, interrupt } from '../engine/result.js';
import type { StageFactory } from '../engine/stage.js';
import type { PipelineDefinition } from '../pipeline.js';
import type { PipelineSettings } from '../config/schema.js';

const decisions = meter.createCounter('conveyor_rate_limit_decisions', { description: 'Fixed-window rate-limit decisions by outcome (allow, drop, wait)' });

export const RATE_LIMIT_NOTICE = '请求数超过限速器设定值，已丢弃本消息。';

/** The fixed-window key: per bot, pipeline and chat (a whole group shares one budget), as LangBot's container key. */
export function rateLimitKey(q: { route: ChatRef; pipelineId: string }): string {
  const chat = chatKey(q.route);
  return `${chat.botId}:${q.pipelineId}:${chat.launcherType}:${chat.launcherId}`;
}

/** What the rate-limit stage asks about a chat's window: the chat's key, the window's length and its limit. */
export interface RateWindowQuestion {
  key: string;
  windowSeconds: number;
  limit: number;
}

/** The question the rate-limit stage asks about a chat's window, from its pipeline's settings. */
function rateWindowQuestion(config: PipelineSettings, q: { route: ChatRef; pipelineId: string }): RateWindowQuestion {
  const rl = config.safety['rate-limit'];
  return { key: rateLimitKey(q), windowSeconds: rl['window-length'], limit: rl.limitation };
}

/**
 * The question this pipeline's rate-limit stage will ask about a chat, when the stage runs before
 * MessageProcessor (in the query's turn at the orchestrator), so that admission can decide it with
 * the session lease; undefined when the pipeline has no such stage there.
 */
export function admissionRateWindow(def: PipelineDefinition, route: ChatRef): RateWindowQuestion | undefined {
  const at = def.stageNames.indexOf('RequireRateLimitOccupancy');
  if (at < 0 || at >= def.boundary) return undefined;
  return rateWindowQuestion(def.config, { route, pipelineId: def.id });
}

/**
 * LangBot's RequireRateLimitOccupancy. `drop` answers with LangBot's notice; `wait` hands the message
 * back to the bus until the next window (a delayed redelivery holds no worker), keeping its session
 * lease alive so the chat's later messages stay behind it, as LangBot's per-chat lock does.
 */
export const requireRateLimit: StageFactory = ({ name, config, deps }) => ({
  name,
  async process(q) {
    const rl = config.safety['rate-limit'];
    const w = rateWindowQuestion(config, q);
    const decision = await need(deps, 'rateLimiter', name).require(w.key, w.windowSeconds, w.limit, q.queryId);
    const outcome = decision.allowed ? 'allow' : rl.strategy;
    decisions.add(1, { decision: outcome, 'conveyor.pipeline.id': q.pipelineId });
    if (decision.allowed) return CONTINUE;
    if (rl.strategy === 'wait') {
      await deps.leases?.extend(q, decision.retryInMs + 60_000);
      throw new RetryableError(decision.retryInMs, `rate limit: waiting ${decision.retryInMs} ms for the next window`);
    }
    const { launcherType, launcherId } = q.route;
    return interrupt({ consoleNotice: `根据限速规则忽略 ${launcherType}:${launcherId} 消息`, userNotice: RATE_LIMIT_NOTICE });
  },
});

/**
 * ReleaseRateLimitOccupancy: a no-op, as LangBot's. The session is not let go when the final item
 * passes here: the runner writes the turn to history after its last item, and the session's next
 * message must see that turn. The session is freed when the reply's last event has gone out
 * (`SessionLeases.finish`), which comes after the history write.
 */
export const releaseRateLimit: StageFactory = ({ name }) => ({
  name,
  async process() {
    return CONTINUE;
  },
});
