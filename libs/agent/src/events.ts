import type { RunnerEventBody } from '@conveyor/contracts';
import type { AgentItem } from './agent-loop.js';

/** Tool results ride on events for observers only; the model gets the whole result. */
export const MAX_EVENT_TOOL_CONTENT = 64 * 1024;

/** The bus event for one item the agent (or an external runner) yielded. */
export function toEventBody(item: AgentItem): RunnerEventBody {
  switch (item.kind) {
    case 'chunk':
      // The names let the dispatcher's ResponseWrapper write LangBot's `Call a.b...`.
      return { kind: 'chunk', text: item.text, isFinal: item.isFinal, hasToolCalls: item.hasToolCalls, ...(item.hasToolCalls ? { toolNames: item.toolNames } : {}) };
    case 'message':
      return { kind: 'message', message: item.message };
    case 'tool_result':
      return { kind: 'tool_result', toolCallId: item.toolCallId, name: item.name, content: item.content.slice(0, MAX_EVENT_TOOL_CONTENT) };
  }
}

/** Whether the body is a run's answer: a final chunk or an assistant message that calls no tool. */
export function isFinalAnswer(body: RunnerEventBody): boolean {
  if (body.kind === 'chunk') return body.isFinal && !body.hasToolCalls;
  if (body.kind === 'message') return body.message.role === 'assistant' && !body.message.tool_calls?.length;
  return false;
}

/**
 * Holds a run's answer back until the run has ended, so that it can go out as the run's last event
 * (marked `last`; no `done` follows) once the turn is in history: one event fewer per reply on every
 * hop. Everything else is published at once; an item after a held answer releases the answer first,
 * so order is kept whatever a runner yields.
 */
export class FinalAnswerHold {
  private held: RunnerEventBody | null = null;

  constructor(private readonly publish: (body: RunnerEventBody) => Promise<unknown>) {}

  async item(body: RunnerEventBody): Promise<void> {
    await this.release();
    if (isFinalAnswer(body)) this.held = body;
    else await this.publish(body);
  }

  /** Publishes the held answer, if any, as an ordinary event. */
  async release(): Promise<void> {
    const held = this.held;
    this.held = null;
    if (held) await this.publish(held);
  }

  /** The held answer (it is no longer held), or null when there is none. */
  take(): RunnerEventBody | null {
    const held = this.held;
    this.held = null;
    return held;
  }
}
