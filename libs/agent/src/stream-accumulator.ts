import type { LlmMessage, ReasoningBlock, ToolCall } from '@conveyor/contracts';
import { stripThink, ThinkStripper } from './think.js';

/** One provider streaming delta, normalized from the SDK's chunk (see llm-call.ts). */
export interface StreamDelta {
  content?: string;
  /** A separate reasoning field (`reasoning_content`), as DeepSeek-style providers send it. */
  reasoning?: string;
  toolCalls?: ToolCallDelta[];
  /** Whole reasoning blocks a native provider must get back in the turn's next rounds (thinking with its signature). */
  blocks?: ReasoningBlock[];
  finishReason?: string | null;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments?: string;
}

/** What the user is shown: the round's cumulative text. */
export interface Snapshot {
  text: string;
  isFinal: boolean;
  /** Set on the final snapshot of a round that ends in tool calls. */
  toolCalls: ToolCall[];
  /**
   * Increases across every round of one reply. LangBot starts each later tool round again from the
   * first round's last number, so its numbers repeat; we keep counting so a receiver can order them.
   */
  sequence: number;
}

/** Shared by all rounds of one reply so snapshot sequence numbers never repeat. */
export class SequenceCounter {
  constructor(private value = 0) {}
  next(): number {
    return ++this.value;
  }
}

export interface AccumulatorOptions {
  removeThink: boolean;
  sequence: SequenceCounter;
  /** LangBot emits every 8 deltas. */
  every?: number;
}

interface PendingCall {
  /** The delta index the call streamed under; a call the provider sent without an id gets `call_<index>` (LangBot). */
  index: number;
  id: string | undefined;
  name: string;
  arguments: string;
}

/**
 * LangBot's `_StreamAccumulator`: deltas in, cumulative snapshots out every `every` deltas and on
 * the last one. Differences, on purpose: tool-call deltas merge by index (ids are often only on the
 * first delta), a final snapshot is always produced (`finish()`, even without a finish reason), and
 * an intermediate snapshot whose text did not change is not emitted (it would only repeat a part).
 */
export class StreamAccumulator {
  private readonly every: number;
  private readonly stripper: ThinkStripper | null;
  private count = 0;
  private text = '';
  private lastEmitted = '';
  private inReasoning = false;
  private finished = false;
  private readonly calls: PendingCall[] = [];
  private readonly blocks: ReasoningBlock[] = [];
  /** The call currently receiving deltas at each index. */
  private readonly byIndex = new Map<number, PendingCall>();

  constructor(private readonly opts: AccumulatorOptions) {
    this.every = opts.every ?? 8;
    this.stripper = opts.removeThink ? new ThinkStripper() : null;
  }

  add(delta: StreamDelta): Snapshot | null {
    // A whole block is kept for the next round, not shown: its text streamed already as reasoning.
    if (delta.blocks?.length) this.blocks.push(...delta.blocks);
    if (this.finished) return null;
    const counts = !!delta.content || !!delta.reasoning || !!delta.toolCalls?.length || !!delta.finishReason;
    if (!counts) return null;
    this.count++;
    if (delta.reasoning && !this.opts.removeThink) {
      if (!this.inReasoning) this.text += '<think>\n';
      this.inReasoning = true;
      this.text += delta.reasoning;
    }
    if (delta.content) {
      this.closeReasoning();
      this.text += this.stripper ? this.stripper.push(delta.content) : delta.content;
    }
    for (const d of delta.toolCalls ?? []) this.mergeCall(d);
    if (delta.finishReason) return this.finish();
    if (this.count % this.every === 0 && this.visible() !== this.lastEmitted) return this.snapshot(false);
    return null;
  }

  /** The round's final snapshot; null when a finish reason already produced it. */
  finish(): Snapshot | null {
    if (this.finished) return null;
    this.finished = true;
    this.closeReasoning();
    if (this.stripper) this.text += this.stripper.flush();
    return this.snapshot(true);
  }

  /** The round as an assistant message, for the next request and for history. */
  message(): LlmMessage {
    const toolCalls = this.toolCalls();
    const text = this.visible();
    return {
      role: 'assistant',
      content: toolCalls.length && !text ? null : text,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      ...(this.blocks.length ? { reasoning_blocks: [...this.blocks] } : {}),
    };
  }

  get deltas(): number {
    return this.count;
  }

  private closeReasoning(): void {
    if (!this.inReasoning) return;
    this.inReasoning = false;
    this.text += '\n</think>\n';
  }

  private mergeCall(d: ToolCallDelta): void {
    let call = this.byIndex.get(d.index);
    // Some providers send several calls under one index, each with its own id: a new id starts a new call.
    if (!call || (d.id && call.id && d.id !== call.id)) {
      call = { index: d.index, id: d.id, name: '', arguments: '' };
      this.calls.push(call);
      this.byIndex.set(d.index, call);
    }
    if (d.id && !call.id) call.id = d.id;
    if (d.name) call.name += d.name;
    if (d.arguments) call.arguments += d.arguments;
  }

  private toolCalls(): ToolCall[] {
    return this.calls.map((c) => ({ id: c.id ?? `call_${c.index}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  }

  /** The round's text as shown: with remove-think, what the stripper let through, stripped as LangBot's `_strip_think` does. */
  private visible(): string {
    return this.stripper ? stripThink(this.text) : this.text;
  }

  private snapshot(isFinal: boolean): Snapshot {
    const text = this.visible();
    this.lastEmitted = text;
    return { text, isFinal, toolCalls: isFinal ? this.toolCalls() : [], sequence: this.opts.sequence.next() };
  }
}
