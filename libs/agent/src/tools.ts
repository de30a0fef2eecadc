import { SpanKind } from '@opentelemetry/api';
import type { ContentPart, LlmMessage, ToolCall } from '@conveyor/contracts';
import { inSpan } from '@conveyor/telemetry';
import type { ToolDefinition } from './llm-call.js';
import { agentMetrics } from './metrics.js';
import { toolContentAttributes } from './genai-semconv.js';

/**
 * A tool result that is already message content (text and images, e.g. from MCP): it goes to the
 * model as is. Any other result is sent as JSON, as LangBot sends it.
 */
export class ContentResult {
  constructor(readonly parts: ContentPart[]) {}
}

export class ToolNotFoundError extends Error {
  constructor(name: string) {
    super(`Tool not found: ${name}`);
  }
}

/** The tools one run may use. */
export interface ToolBox {
  definitions(): ToolDefinition[];
  /** Throws ToolNotFoundError for a name it does not have; any other throw is the tool's failure. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
}

export const emptyToolBox: ToolBox = {
  definitions: () => [],
  call: async (name) => {
    throw new ToolNotFoundError(name);
  },
};

/** `local-agent.enable-all-tools` false: only the listed names are offered, and only those may be called. */
export function filterToolBox(box: ToolBox, allowed: readonly string[]): ToolBox {
  const names = new Set(allowed);
  return {
    definitions: () => box.definitions().filter((d) => names.has(d.function.name)),
    call: (name, args, signal) => (names.has(name) ? box.call(name, args, signal) : Promise.reject(new ToolNotFoundError(name))),
  };
}

function parseArguments(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('tool arguments must be a JSON object');
  return value as Record<string, unknown>;
}

function toContent(result: unknown): string | ContentPart[] {
  if (result instanceof ContentResult && result.parts.length > 0) return result.parts;
  return JSON.stringify(result instanceof ContentResult ? [] : (result ?? null));
}

/**
 * Runs one tool call, in a span. Every failure (bad JSON arguments, an unknown tool, the tool's
 * own error) becomes an `err: ...` tool message for the model, never an exception: the model may
 * recover, and the loop continues (LangBot's agent loop does the same).
 */
export function executeToolCall(
  box: ToolBox,
  call: ToolCall,
  signal?: AbortSignal,
  opts: { captureContent?: boolean } = {},
): Promise<LlmMessage & { role: 'tool' }> {
  const name = call.function.name;
  return inSpan(
    `execute_tool ${name}`,
    { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.type': 'function', 'gen_ai.tool.call.id': call.id },
    async (span) => {
      const answered = (content: LlmMessage['content']): LlmMessage & { role: 'tool' } => {
        if (opts.captureContent) span.setAttributes(toolContentAttributes(call.function.arguments, content));
        return { role: 'tool', tool_call_id: call.id, content };
      };
      try {
        const result = await box.call(name, parseArguments(call.function.arguments), signal);
        agentMetrics.toolCalls.add(1, { outcome: 'ok' });
        return answered(toContent(result));
      } catch (err) {
        if (signal?.aborted) throw err;
        const outcome = err instanceof ToolNotFoundError ? 'not_found' : err instanceof SyntaxError ? 'bad_arguments' : 'error';
        agentMetrics.toolCalls.add(1, { outcome });
        span.setAttribute('error.type', outcome);
        span.setAttribute('conveyor.tool.error', (err as Error).message);
        return answered(`err: ${(err as Error).message}`);
      }
    },
    SpanKind.INTERNAL,
  );
}
