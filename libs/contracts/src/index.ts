// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { LIMITS } from './limits.js';
export {
  pluginSubjects, replyEventGapMs, subjectToken, topology, type ConsumerSpec, type PluginSubjects,
  type StreamSpec, type Topology,
} from './topology.js';
export { HEADERS } from './headers.js';
export {
  MessageChainSchema, plainText, type ForwardComponentT, type ForwardNodeT, type MessageChain,
  type MessageComponent,
} from './message-chain.js';
export { storableChain, storableEventBody, storableMessages, storableText } from './storable-text.js';
export { ContentPart, LlmMessage, ReasoningBlock, ToolCall, messageText } from './llm-message.js';
export { MODEL_PRESETS, MODEL_PRESET_IDS, ModelProviderKind, modelPreset } from './model-providers.js';
export {
  ADAPTER_NAME_RE, AdapterName, DeadLetter, IngestJob, LauncherType, MaxDeliveriesAdvisory,
  ModelSelection, QueryEnvelope, ReasoningLevel, ReplyRoute, RunRequest, RunnerEvent, RunnerKind,
  SentNotice, ToolBinding, type RunnerEventBody,
} from './messages.js';
export {
  DEFAULT_KEY_LAYOUT, pipelineShardCap, redisKeys, type RedisKeyLayout, type RedisKeys,
  type ReplySessionKey,
} from './redis-keys.js';
export { chatKey, type ChatKey, type ChatRef } from './chat-key.js';
export {
  PLUGIN_LIMITS, PluginDiscover, PluginEventName, PluginEventPayload, PluginEventReply,
  PluginEventRequest, PluginName, PluginRegistration, PluginTool, PluginToolCall, PluginToolName, PluginToolResult,
  PluginCommand, PluginCommandCall, PluginCommandName, PluginCommandResult,
  foldPluginReply, noPluginOutcome, type PluginBinding, type PluginEventOutcome,
  PluginHostRequest, PluginHostReply, PluginHostStreamChunk, PluginHostErrorCode, PluginSettingsChanged, PluginRetriever, PluginRetrieveCall, PluginRetrieveResult, type PluginHostOp, type PluginHostResults,
} from './plugins.js';
export { PermanentError, RetryableError } from './handler-errors.js';
export {
  GatewaySendFailure, GatewaySendReply, GatewaySendRequest, isPassingGatewayFailure,
} from './gateway.js';
export {
  BOX_SESSION_TEMPLATES, BoxSessionTemplate, ChatAttachment, ExecResult, MountedSkill, REPEATABLE_SANDBOX_OPS,
  SANDBOX_LIMITS, SandboxBinding, SandboxFailure, SandboxLimit, SandboxOp, SandboxReply,
  SandboxRequest, SkillName, TransferredFile, WorkspaceId, type SandboxOpName, type SandboxRequestInput,
  McpProcessId, SANDBOX_MCP_LIMITS, SandboxMcpInput, SandboxMcpOpen, SandboxMcpOpenReply, SandboxMcpOutput, type SandboxMcpOpenInput,
} from './sandbox.js';
export { CONFIG_CACHE_SAFETY_TTL_MS, ConfigChangeKind, ConfigChanged } from './config-events.js';
export * as AdminApi from './admin-api.js';
export * as DebugChat from './debug-chat.js';
export { DirectSendRequest, DirectSendReply, DirectSendErrorCode } from './direct-send.js';
export { DEFAULT_HUMAN_REQUEST_REPLY, HumanHandoff, HumanRequestVia, TakeoverChat, TakeoverEvent, takeoverKey } from './takeover.js';
