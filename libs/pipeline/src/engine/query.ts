import type { ChatAttachment, LlmMessage, MessageChain, ReplyRoute } from '@conveyor/contracts';
import type { PipelineSettings } from '../config/schema.js';

/**
 * One item the generator stage (MessageProcessor) yields: a streamed chunk with cumulative text, a
 * whole model message, or a command reply. It is what LangBot keeps as `resp_messages[-1]`.
 */
export type RespItem =
  | { kind: 'chunk'; text: string; isFinal: boolean; hasToolCalls: boolean; toolNames: string[]; attachments?: ChatAttachment[] }
  | { kind: 'message'; message: LlmMessage; attachments?: ChatAttachment[] }
  | { kind: 'command'; text: string }
  /** A plugin's reply chain (prevent_default with reply_message_chain), sent as the answer unchanged. */
  | { kind: 'plugin'; chain: MessageChain };

/** LangBot's Query: the mutable context every stage reads and writes. */
export interface PipelineQuery {
  queryId: string;
  pipelineId: string;
  route: ReplyRoute;
  senderName: string;
  groupName?: string;
  receivedAt: string;
  config: PipelineSettings;
  /** The MCP servers the pipeline binds (LangBot's `_pipeline_bound_mcp_servers`); absent means all. */
  mcpServers?: 'all' | string[];
  /** The plugins the pipeline binds (LangBot's `_pipeline_bound_plugins`); absent means all. */
  plugins?: 'all' | string[];
  /** The skills the pipeline binds (LangBot's `_pipeline_bound_skills`); absent means all. */
  skills?: 'all' | string[];
  /** Rewritten by group rules and the pre content filter. */
  messageChain: MessageChain;
  variables: Record<string, unknown>;
  /** Whether the adapter shows streamed replies (LangBot's is_stream_output_supported). */
  streamOutput: boolean;
  /** The adapter's own account id, for the at-bot rule (`http_bot` for the HTTP-bot adapter). */
  botAccountId: string;
  conversationId?: string;
  /** The per-turn copy of the conversation preset; the date paragraph goes here, never into storage. */
  prompt: LlmMessage[];
  /** History for this turn. */
  messages: LlmMessage[];
  userMessage?: LlmMessage;
  respMessages: RespItem[];
  respMessageChain: MessageChain[];
  currentStage?: string;
}

export function isGroup(q: PipelineQuery): boolean {
  return q.route.launcherType === 'group';
}

/** The item is the end of the reply: nothing follows it for this query. */
export function isFinalItem(item: RespItem): boolean {
  if (item.kind === 'chunk') return item.isFinal && !item.hasToolCalls;
  if (item.kind === 'message') return item.message.role === 'assistant' && !item.message.tool_calls?.length;
  return false;
}
