import type { AgentItem } from '../agent-loop.js';
import { SequenceCounter, StreamAccumulator } from '../stream-accumulator.js';
import { pyStrip } from '../think.js';

export interface ExternalInput {
  /** The user's text (LangBot: the first text element). */
  query: string;
  /** `{launcher_type}_{launcher_id}`. */
  user: string;
  /** The remote conversation id from an earlier turn, if any. */
  conversationId?: string;
  /** Query variables (LangBot sends all of them as `inputs`). */
  variables: Record<string, unknown>;
  stream: boolean;
  removeThink: boolean;
  emit(item: AgentItem): Promise<void>;
  signal?: AbortSignal;
  /** The bot answering (Tbox's `userId` is LangBot's bot id). */
  botId?: string;
  /**
   * The images of the user's message, read when a runner asks (only the runners that upload
   * images to their service call it, so the others fetch nothing).
   */
  images?: () => Promise<ExternalImage[]>;
}

/** One image of the user's message, read and bounded by the runner's attachment limits. */
export interface ExternalImage {
  bytes: Uint8Array;
  contentType: string;
}

/** Token usage as the remote service reported it for the run (summed over its model calls). */
export interface ExternalUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ExternalResult {
  text: string;
  conversationId?: string;
  /** Absent when the service reports no usage (n8n, WeKnora) or this run's answer carried none. */
  usage?: ExternalUsage;
}

/** A token count as a service sends it: a non-negative integer, or nothing. */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

const THINK_BLOCK = /<think>[\s\S]*?<\/think>/g;

/**
 * `remove-think` on an external runner's cumulative text, as LangBot's Dify runner does it
 * (`visible_content`): an unclosed `<think>` hides the rest (the text before it right-stripped);
 * otherwise every closed block goes and the text is stripped. Each snapshot is judged on its own, so
 * the answer streams as it comes (the local agent's stripper holds text back until it shows).
 */
export function externalVisibleText(text: string): string {
  if (!text.includes('<think>')) return text;
  if (!text.includes('</think>')) return pyStrip(text.slice(0, text.indexOf('<think>')), 'end');
  const without = text.replace(THINK_BLOCK, '');
  return without === text ? text : pyStrip(without);
}

/**
 * Streaming convention of LangBot's external runners: cumulative text every 8 pieces and a final
 * part; non-streaming: one message at the end. The same accumulator as the local agent, so the
 * always-final part behaves the same; `remove-think` is applied per snapshot (externalVisibleText).
 */
export class ExternalReply {
  private readonly acc: StreamAccumulator;

  /**
   * `rewrite`: applied to the whole text of every snapshot before `remove-think` (DashScope's
   * reference tags, whose documents may arrive after the tag).
   */
  constructor(
    private readonly input: ExternalInput,
    private readonly rewrite: (text: string) => string = (text) => text,
  ) {
    this.acc = new StreamAccumulator({ removeThink: false, sequence: new SequenceCounter() });
  }

  private shown(text: string): string {
    const whole = this.rewrite(text);
    return this.input.removeThink ? externalVisibleText(whole) : whole;
  }

  async delta(text: string): Promise<void> {
    const s = this.acc.add({ content: text });
    if (s && this.input.stream) await this.input.emit({ kind: 'chunk', text: this.shown(s.text), isFinal: false, hasToolCalls: false, toolNames: [], sequence: s.sequence });
  }

  /** `replace`: a runner that learned the complete answer at the end (Dify's workflow summary). */
  async finish(replace?: string): Promise<string> {
    const s = this.acc.finish()!;
    const text = this.shown(replace ?? s.text);
    if (this.input.stream) await this.input.emit({ kind: 'chunk', text, isFinal: true, hasToolCalls: false, toolNames: [], sequence: s.sequence });
    else await this.input.emit({ kind: 'message', message: { role: 'assistant', content: text } });
    return text;
  }
}

export class ExternalRunnerError extends Error {}

/** The signal of one remote call: the runner's own (drain, redelivery) and the call's time limit. */
export function requestSignal(timeoutMs: number, signal?: AbortSignal): AbortSignal {
  return AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]);
}

/** Parses one JSON event of a remote stream; a malformed one is skipped (undefined), as LangBot does. */
export function parseEvent<T>(data: string): T | undefined {
  try {
    return JSON.parse(data) as T;
  } catch {
    return undefined;
  }
}

export async function checkResponse(res: Response, what: string): Promise<void> {
  if (res.ok) return;
  const body = (await res.text().catch(() => '')).slice(0, 500);
  throw new ExternalRunnerError(`${what} answered HTTP ${res.status}: ${body}`);
}
