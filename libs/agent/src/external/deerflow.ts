import { createHash } from 'node:crypto';
import { checkResponse, ExternalReply, ExternalRunnerError, parseEvent, requestSignal, type ExternalInput, type ExternalResult } from './common.js';
import { sseMessages } from './stream-parsers.js';
import { bool, num, str, type RunnerSettings, type SecretResolver } from './settings.js';

/** `ai.deerflow-api`, keys and defaults of LangBot's pipeline metadata. */
export interface DeerflowConfig {
  apiBase: string;
  apiKey: string;
  /** `auth-header`: when set, sent as the whole `Authorization` value (LangBot's code), else `Bearer <api-key>`. */
  authHeader: string;
  assistantId: string;
  modelName: string;
  thinkingEnabled: boolean;
  planMode: boolean;
  subagentEnabled: boolean;
  maxConcurrentSubagents: number;
  recursionLimit: number;
  timeoutMs: number;
}

type Json = unknown;
type MessageObject = Record<string, Json>;

/** How many state messages a run remembers, as LangBot bounds them. */
const MAX_VALUES_HISTORY = 200;
/** Subtask failures kept for the summary (only five are shown). */
const MAX_TASK_FAILURES = 50;
/** LangBot's time limit for opening a thread (or the runner's timeout when shorter). */
const THREAD_TIMEOUT_MS = 30_000;

const isObject = (v: Json): v is MessageObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a LangChain message content: a string, `{text}`, nested `content`/`kwargs`, or a list of parts. */
export function deerflowText(content: Json): string {
  if (typeof content === 'string') return content;
  if (isObject(content)) {
    if (typeof content.text === 'string') return content.text;
    if ('content' in content) return deerflowText(content.content);
    if (isObject(content.kwargs)) return deerflowText(content.kwargs.content);
  }
  if (Array.isArray(content)) {
    const parts = content.map((item) => {
      if (typeof item === 'string') return item;
      if (isObject(item)) {
        if (item.type === 'text' && typeof item.text === 'string') return item.text;
        if ('content' in item) return deerflowText(item.content);
      }
      return '';
    });
    return parts.filter((p) => p).join('\n').trim();
  }
  return content == null ? '' : String(content);
}

/** An AI message by `role` or LangChain `type` (`ai`, `AIMessageChunk`, ...), as LangBot tells them. */
function isAiMessage(m: MessageObject): boolean {
  const role = String(m.role ?? '').toLowerCase();
  if (role === 'assistant' || role === 'ai') return true;
  const type = String(m.type ?? '').toLowerCase();
  if (['ai', 'assistant', 'aimessage', 'aimessagechunk'].includes(type)) return true;
  return type.includes('ai') && !['human', 'tool', 'system'].some((t) => type.includes(t));
}

const isClarification = (m: MessageObject) => String(m.type ?? '').toLowerCase() === 'tool' && String(m.name ?? '').toLowerCase() === 'ask_clarification';

function valuesMessages(data: Json): Json[] {
  const candidates = isObject(data) ? [data, ...(isObject(data.values) ? [data.values] : [])] : Array.isArray(data) ? data.filter(isObject) : [];
  for (const c of candidates) if (Array.isArray(c.messages)) return c.messages;
  return [];
}

/** The message of a `messages-tuple` event: `[message, metadata]`, possibly wrapped in `{data}`. */
function eventMessage(data: Json): MessageObject | undefined {
  let m = Array.isArray(data) && data.length ? data[0] : data;
  if (isObject(m) && isObject(m.data)) m = m.data;
  return isObject(m) ? m : undefined;
}

function taskFailures(data: Json): string[] {
  const items = isObject(data) ? [data] : Array.isArray(data) ? data.flatMap((d) => (isObject(d) ? [d] : Array.isArray(d) ? d.filter(isObject) : [])) : [];
  return items.flatMap((item) => {
    const type = String(item.type ?? '').toLowerCase();
    if (type !== 'task_failed' && type !== 'task_timed_out') return [];
    const task = String(item.task_id ?? '').trim();
    const error = deerflowText(item.error).trim();
    return [task && error ? `${task}: ${error}` : error || (task ? `${task}: unknown error` : 'unknown task failure')];
  });
}

/** LangBot's summary of failed subtasks, the answer when the run produced no text. */
function failureSummary(failures: string[]): string {
  const distinct = [...new Set(failures)];
  if (distinct.length === 0) return '';
  if (distinct.length === 1) return `DeerFlow subtask failed: ${distinct[0]}`;
  return `DeerFlow subtasks failed:\n${distinct.slice(0, 5).map((f) => `- ${f}`).join('\n')}`;
}

/**
 * Which state messages are new in a run: `values` events carry the thread's whole state, so
 * messages are told apart by id (the last 200 remembered), or by position and content when they have none.
 */
class RunMessages {
  private readonly seen = new Set<string>();
  private readonly order: string[] = [];
  private readonly noIdPrints = new Map<number, string>();
  private baseline = false;
  readonly messages: MessageObject[] = [];

  private remember(id: string): void {
    if (this.seen.has(id)) return;
    this.seen.add(id);
    this.order.push(id);
    while (this.order.length > MAX_VALUES_HISTORY) this.seen.delete(this.order.shift()!);
  }

  /**
   * Adds a state's new messages. The first state is the thread before this run (earlier turns and the
   * new question): remembered, not taken as this run's answer, so a kept thread's last answer is never
   * shown again (LangBot counts it and may stream the previous answer first).
   */
  add(values: Json[]): void {
    const first = !this.baseline;
    this.baseline = true;
    const noIdSeen = new Set<number>();
    values.forEach((m, idx) => {
      if (!isObject(m)) return;
      const id = typeof m.id === 'string' ? m.id : '';
      if (id) {
        if (this.seen.has(id)) return;
        this.remember(id);
      } else {
        noIdSeen.add(idx);
        const print = createHash('sha1').update(JSON.stringify(m)).digest('hex');
        if (this.noIdPrints.get(idx) === print) return;
        this.noIdPrints.set(idx, print);
      }
      if (!first) this.messages.push(m);
    });
    for (const idx of [...this.noIdPrints.keys()]) if (!noIdSeen.has(idx)) this.noIdPrints.delete(idx);
    if (this.messages.length > MAX_VALUES_HISTORY) this.messages.splice(0, this.messages.length - MAX_VALUES_HISTORY);
  }

  latestAiText(): string {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (isAiMessage(m)) {
        const text = deerflowText(m.content);
        if (text) return text;
      }
    }
    return '';
  }

  latestAiMessage(): MessageObject | undefined {
    for (let i = this.messages.length - 1; i >= 0; i--) if (isAiMessage(this.messages[i])) return this.messages[i];
    return undefined;
  }

  latestClarification(): string {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (isClarification(m)) {
        const text = deerflowText(m.content);
        if (text) return text;
      }
    }
    return '';
  }
}

/**
 * DeerFlow through its LangGraph API. A conversation is a LangGraph thread, opened with `POST
 * /api/langgraph/threads` on a session's first message and kept as the remote conversation; the
 * question runs with `POST /api/langgraph/threads/{thread}/runs/stream` (`stream_mode` values,
 * messages-tuple, custom; DeerFlow's switches in `config.configurable` and, for older servers,
 * `context`). The answer, as LangBot builds it: `messages` deltas of AI messages stream until a
 * `values` state carries this run's AI text, which then takes over; a clarification question asked
 * through the `ask_clarification` tool is the answer instead; with no text, failed subtasks (`custom`
 * events) are summarised, else `DeerFlow 返回空响应`. An `error` event fails the call. When the
 * runner's timeout passes mid-run, what arrived so far is the answer with LangBot's timeout note.
 */
export async function runDeerflow(cfg: DeerflowConfig, input: ExternalInput): Promise<ExternalResult> {
  const base = cfg.apiBase.replace(/\/+$/, '');
  const auth: Record<string, string> = cfg.authHeader ? { authorization: cfg.authHeader } : cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {};
  const threadId = input.conversationId ?? (await openThread(base, auth, Math.min(THREAD_TIMEOUT_MS, cfg.timeoutMs), input));
  const configurable: Record<string, unknown> = { thread_id: threadId, thinking_enabled: cfg.thinkingEnabled, is_plan_mode: cfg.planMode, subagent_enabled: cfg.subagentEnabled };
  if (cfg.subagentEnabled) configurable.max_concurrent_subagents = cfg.maxConcurrentSubagents;
  if (cfg.modelName) configurable.model_name = cfg.modelName;
  const payload = {
    assistant_id: cfg.assistantId,
    input: { messages: [{ role: 'user', content: input.query || 'continue' }] },
    stream_mode: ['values', 'messages-tuple', 'custom'],
    context: { ...configurable },
    config: { recursion_limit: cfg.recursionLimit, configurable },
  };

  const timeout = AbortSignal.timeout(cfg.timeoutMs);
  const reply = new ExternalReply(input);
  const run = new RunMessages();
  let streamed = '';
  let shown = '';
  let valuesText = false;
  let clarification = '';
  const failures: string[] = [];
  let timedOut = false;
  try {
    const res = await fetch(`${base}/api/langgraph/threads/${encodeURIComponent(threadId)}/runs/stream`, {
      method: 'POST',
      headers: { ...auth, accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      signal: AbortSignal.any([timeout, ...(input.signal ? [input.signal] : [])]),
    });
    await checkResponse(res, 'DeerFlow');
    for await (const { event, data: raw } of sseMessages(res.body)) {
      const data = parseEvent<Json>(raw) ?? raw;
      if (event === 'values') {
        run.add(valuesMessages(data));
        const latest = run.latestAiText();
        if (latest) valuesText = true;
        clarification = run.latestClarification() || clarification;
        // A state's text that continues what was shown streams as its remainder; one that does not shows in the final part.
        if (latest && latest !== shown && latest.startsWith(shown)) {
          await reply.delta(latest.slice(shown.length));
          shown = latest;
        }
      } else if (event === 'messages-tuple' || event === 'messages' || event === 'message') {
        const m = eventMessage(data);
        const delta = m && isAiMessage(m) ? deerflowText(m.content) : '';
        if (delta && !valuesText) {
          streamed += delta;
          if (streamed.startsWith(shown)) {
            await reply.delta(streamed.slice(shown.length));
            shown = streamed;
          }
        } else if (m && isClarification(m)) clarification = deerflowText(m.content) || clarification;
      } else if (event === 'custom') {
        if (failures.length < MAX_TASK_FAILURES) failures.push(...taskFailures(data).slice(0, MAX_TASK_FAILURES - failures.length));
      } else if (event === 'error') {
        throw new ExternalRunnerError(`DeerFlow stream error event: ${raw.slice(0, 500)}`);
      } else if (event === 'end') break;
    }
  } catch (err) {
    // LangBot answers with what arrived when its timeout passes; the runner's own abort (drain) still fails.
    if (!timeout.aborted || input.signal?.aborted) throw err;
    timedOut = true;
  }
  const note = timedOut ? `\n\nDeerFlow stream 在 ${cfg.timeoutMs / 1000}s 后超时，返回部分结果。` : '';
  const latestAi = run.latestAiMessage();
  const latestAiText = latestAi ? deerflowText(latestAi.content) : '';
  const text = clarification || (latestAiText ? latestAiText + note : streamed ? streamed + note : failureSummary(failures) || 'DeerFlow 返回空响应');
  return { text: await reply.finish(text), conversationId: threadId };
}

async function openThread(base: string, auth: Record<string, string>, timeoutMs: number, input: ExternalInput): Promise<string> {
  const res = await fetch(`${base}/api/langgraph/threads`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: {} }),
    signal: requestSignal(timeoutMs, input.signal),
  });
  await checkResponse(res, 'DeerFlow');
  const thread = parseEvent<{ thread_id?: unknown }>((await res.text()).slice(0, 1024 * 1024));
  const id = thread?.thread_id;
  if (typeof id !== 'string' || !id) throw new ExternalRunnerError('DeerFlow opened a thread without a thread_id');
  return id;
}

/**
 * Reads `ai.deerflow-api` into the runner's config, with LangBot's defaults; secrets through `secret`.
 * LangBot refuses an API base that is not an http(s) URL before calling.
 */
export function deerflowConfig(s: RunnerSettings, secret: SecretResolver): DeerflowConfig {
  const apiBase = str(s['api-base'], 'http://127.0.0.1:2026').trim();
  if (!/^https?:\/\//.test(apiBase)) throw new ExternalRunnerError('deerflow-api api-base must start with http:// or https://');
  const positive = (v: unknown, d: number) => (num(v, d) > 0 ? Math.trunc(num(v, d)) : d);
  return {
    apiBase,
    apiKey: s['api-key'] ? secret(s['api-key']) : '',
    authHeader: s['auth-header'] ? secret(s['auth-header']) : '',
    assistantId: str(s['assistant-id'], 'lead_agent'),
    modelName: str(s['model-name']),
    thinkingEnabled: bool(s['thinking-enabled'], false),
    planMode: bool(s['plan-mode'], false),
    subagentEnabled: bool(s['subagent-enabled'], false),
    maxConcurrentSubagents: positive(s['max-concurrent-subagents'], 3),
    recursionLimit: positive(s['recursion-limit'], 1000),
    // 0 or less would abort every call at once; LangBot's default stands instead.
    timeoutMs: positive(s.timeout, 300) * 1000,
  };
}
