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

export const LlmMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(ContentPart)]).nullable(),
  tool_calls: z.array(ToolCall).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});
export type LlmMessage = z.infer<typeof LlmMessage>;

export function messageText(message: Pick<LlmMessage, 'content'>): string {
  if (message.content == null) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
}
