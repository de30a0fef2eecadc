import { z } from 'zod';

/** A conversation message in OpenAI chat-completions shape: what history stores and what the runner sends. */
export const ContentPart = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string() }) }),
]);
export type ContentPart = z.infer<typeof ContentPart>;

export const ToolCall = z.object({
  id: z.string(),
  type: z.literal('function').default('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCall>;

/**
 * Reasoning a native provider returned with an assistant turn that must go back to it, unchanged, in
 * the turn's later tool rounds: Anthropic's thinking blocks (with their signature) and redacted
 * thinking, Gemini's thought signatures (on a function call, `tool_call_id`, or on the text). Ollama's
 * thinking text rides as a `thinking` block without signature. The shown text keeps its `<think>`
 * rendering; these blocks are what the provider verifies.
 */
export const ReasoningBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().optional() }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
  z.object({ type: z.literal('thought_signature'), signature: z.string(), tool_call_id: z.string().optional() }),
]);
export type ReasoningBlock = z.infer<typeof ReasoningBlock>;

export const LlmMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(ContentPart)]).nullable(),
  tool_calls: z.array(ToolCall).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
  /** Assistant turns of native providers only (see ReasoningBlock); never sent to an OpenAI-compatible endpoint. */
  reasoning_blocks: z.array(ReasoningBlock).max(256).optional(),
});
export type LlmMessage = z.infer<typeof LlmMessage>;

export function messageText(message: Pick<LlmMessage, 'content'>): string {
  if (message.content == null) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
}
