import type { LlmMessage } from './llm-message.js';
import type { MessageChain, MessageComponent } from './message-chain.js';
import type { RunnerEventBody } from './messages.js';

const NUL = /\u0000/g;
/** With the `u` flag a surrogate code unit only matches when it is not half of a pair. */
const LONE_SURROGATE = /\p{Cs}/gu;

/**
 * `text` as Postgres can store it: NUL removed (a text or jsonb value cannot hold U+0000) and every
 * lone UTF-16 surrogate replaced by U+FFFD (it has no UTF-8 form, so jsonb refuses its escape).
 * Platforms send both; without this a message is accepted and then fails where it is written.
 */
export function storableText(text: string): string {
  return text.replace(NUL, '').replace(LONE_SURROGATE, '\uFFFD');
}

/** The chain with every string in it made storable, nested chains included. For validated chains (nesting is bounded). */
export function storableChain(chain: MessageChain): MessageChain {
  return chain.map((component) => storableValue(component) as MessageComponent);
}

/**
 * Conversation messages with every string in them made storable: a model's answer (or a tool's result)
 * can hold NUL or a lone surrogate as well as a platform's text can, and history is kept in Postgres.
 */
export function storableMessages(messages: readonly LlmMessage[]): LlmMessage[] {
  return messages.map((message) => storableValue(message) as LlmMessage);
}

/** A runner event's body with every string in it made storable (the query log keeps a run's last event). */
export function storableEventBody(body: RunnerEventBody): RunnerEventBody {
  return storableValue(body) as RunnerEventBody;
}

function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableValue);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, storableValue(v)]));
  }
  return value;
}
