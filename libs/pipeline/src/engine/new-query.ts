import type { QueryEnvelope, ReplyRoute } from '@conveyor/contracts';
import type { PipelineDefinition } from '../pipeline.js';
import type { PipelineQuery } from './query.js';

/** LangBot's adapters report their own account id; the HTTP-bot adapter's is the fixed `http_bot`. */
export const BOT_ACCOUNT_IDS: Record<string, string> = { 'http-bot': 'http_bot' };
/** Adapters whose replies always stream: HTTP-bot (LangBot's has no key to turn it off) and the web chat. */
export const STREAMING_ADAPTERS = new Set(['http-bot', 'webchat']);

/** The ingress decides per bot (Telegram's `enable-stream-reply`); otherwise the adapter's default. */
export function streamsTo(route: ReplyRoute): boolean {
  return route.stream ?? STREAMING_ADAPTERS.has(route.adapter);
}

/** A fresh query context for an inbound message. */
export function newQuery(envelope: QueryEnvelope, pipeline: PipelineDefinition, variables: Record<string, unknown> = {}): PipelineQuery {
  return {
    queryId: envelope.queryId,
    pipelineId: pipeline.id,
    route: envelope.route,
    senderName: envelope.senderName,
    groupName: envelope.groupName,
    receivedAt: envelope.receivedAt,
    config: pipeline.config,
    mcpServers: pipeline.mcpServers,
    plugins: pipeline.plugins,
    skills: pipeline.skills,
    messageChain: structuredClone(envelope.messageChain),
    variables: { _routed_by_rule: false, ...variables },
    streamOutput: streamsTo(envelope.route),
    botAccountId: BOT_ACCOUNT_IDS[envelope.route.adapter] ?? envelope.route.botId,
    prompt: [],
    messages: [],
    respMessages: [],
    respMessageChain: [],
  };
}
