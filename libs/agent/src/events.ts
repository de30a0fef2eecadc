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
