import type { LlmMessage } from '@conveyor/contracts';

/**
 * LangBot's `rag_combined_prompt_template` (local-agent runner), byte for byte: its first two
 * instruction lines end with a space, and the template starts and ends with a newline.
 */
export const RAG_COMBINED_PROMPT_TEMPLATE =
  '\nThe following are relevant context entries retrieved from the knowledge base. \n' +
  'Please use them to answer the user\'s message. \n' +
  'Respond in the same language as the user\'s input.\n' +
  '\n' +
  '<context>\n' +
  '{rag_context}\n' +
  '</context>\n' +
  '\n' +
  '<user_message>\n' +
  '{user_message}\n' +
  '</user_message>\n';

/** The template filled as LangBot fills it: entries numbered `[1] …`, `[2] …`, joined by blank lines. */
export function combinedPrompt(entries: readonly string[], userMessage: string): string {
  const context = entries.map((text, i) => `[${i + 1}] ${text}`).join('\n\n');
  // One pass over the template, so text containing `{user_message}` is never substituted again.
  return RAG_COMBINED_PROMPT_TEMPLATE.replace(/\{rag_context\}|\{user_message\}/g, (slot) => (slot === '{rag_context}' ? context : userMessage));
}

/**
 * The text LangBot retrieves with: a string content whole, else the first text part only. Empty for
 * a message without text (an image alone), which therefore retrieves nothing.
 */
export function retrievalText(message: Pick<LlmMessage, 'content'>): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  for (const part of message.content) if (part.type === 'text') return part.text;
  return '';
}

/** The message with its first text part (or its string content) replaced by `text`; other parts stay. */
export function withRetrievalText<M extends Pick<LlmMessage, 'content'>>(message: M, text: string): M {
  if (typeof message.content === 'string') return { ...message, content: text };
  if (!Array.isArray(message.content)) return message;
  const index = message.content.findIndex((part) => part.type === 'text');
  if (index < 0) return message;
  const content = message.content.map((part, i) => (i === index ? { ...part, text } : part));
  return { ...message, content } as M;
}
