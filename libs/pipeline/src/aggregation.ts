import type { MessageChain, QueryEnvelope } from '@conveyor/contracts';
import type { PipelineSettings } from './config/schema.js';

/** LangBot's `trigger.message-aggregation` as the orchestrator applies it. */
export interface AggregationSettings {
  enabled: boolean;
  /** The debounce delay: how long after a session's newest message its queued messages are merged. */
  delayMs: number;
}

const DEFAULT_DELAY_SECONDS = 1.5;
const MIN_DELAY_SECONDS = 1;
const MAX_DELAY_SECONDS = 10;

/**
 * LangBot's reading of the key (MessageAggregator._get_aggregation_config): off unless `enabled`; the
 * delay in seconds, 1.5 when it is no number, clamped to [1, 10].
 */
export function aggregationSettings(config: PipelineSettings): AggregationSettings {
  const section = config.trigger['message-aggregation'];
  const raw = Number(section.delay);
  const seconds = Number.isFinite(raw) ? Math.min(MAX_DELAY_SECONDS, Math.max(MIN_DELAY_SECONDS, raw)) : DEFAULT_DELAY_SECONDS;
  return { enabled: section.enabled === true, delayMs: Math.round(seconds * 1000) };
}

/**
 * LangBot's merge of buffered messages (MessageAggregator._merge_messages): every component of every
 * chain in order, with a `Plain('\n')` between two messages; every message's own components (its
 * `Source` too) are kept as they are.
 */
export function mergeMessageChains(chains: readonly MessageChain[]): MessageChain {
  const merged: MessageChain = [];
  chains.forEach((chain, index) => {
    if (index > 0) merged.push({ type: 'Plain', text: '\n' });
    merged.push(...chain);
  });
  return merged;
}

/**
 * The query that answers a run of merged messages: the first message's id, route (sender, reply-to),
 * names and arrival time, as LangBot keeps the first message's event and sender; the chains merged.
 */
export function mergeEnvelopes(first: QueryEnvelope, rest: readonly QueryEnvelope[]): QueryEnvelope {
  if (rest.length === 0) return first;
  return { ...first, messageChain: mergeMessageChains([first.messageChain, ...rest.map((e) => e.messageChain)]) };
}
