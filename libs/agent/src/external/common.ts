import type { AgentItem } from '../agent-loop.js';
import { SequenceCounter, StreamAccumulator } from '../stream-accumulator.js';
import { stripThink } from '../think.js';

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
}

export interface ExternalResult {
  text: string;
  conversationId?: string;
}

/**
 * Streaming convention of LangBot's external runners: cumulative text every 8 pieces and a final
 * part; non-streaming: one message at the end. The same accumulator as the local agent, so
 * `remove-think` and the always-final part behave the same.
 */
export class ExternalReply {
  private readonly acc: StreamAccumulator;

  constructor(private readonly input: ExternalInput) {
    this.acc = new StreamAccumulator({ removeThink: input.removeThink, sequence: new SequenceCounter() });
  }

  async delta(text: string): Promise<void> {
    const s = this.acc.add({ content: text });
    if (s && this.input.stream) await this.input.emit({ kind: 'chunk', text: s.text, isFinal: false, hasToolCalls: false, toolNames: [], sequence: s.sequence });
  }

  /** `replace`: a runner that learned the complete answer at the end (Dify's workflow summary). */
  async finish(replace?: string): Promise<string> {
    const s = this.acc.finish()!;
    const text = replace !== undefined ? (this.input.removeThink ? stripThink(replace) : replace) : s.text;
    if (this.input.stream) await this.input.emit({ kind: 'chunk', text, isFinal: true, hasToolCalls: false, toolNames: [], sequence: s.sequence });
    else await this.input.emit({ kind: 'message', message: { role: 'assistant', content: text } });
    return text;
  }
}

export class ExternalRunnerError extends Error {}

export async function checkResponse(res: Response, what: string): Promise<void> {
  if (res.ok) return;
  const body = (await res.text().catch(() => '')).slice(0, 500);
  throw new ExternalRunnerError(`${what} answered HTTP ${res.status}: ${body}`);
}
