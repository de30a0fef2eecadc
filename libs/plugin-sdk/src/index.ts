// What a plugin author uses: the runner of a plugin and the wire types of its events. Everything the
// wire module declares is public here, since plugins outside this repository rely on it.
export { runPlugin, type EventContext, type EventHandler, type Handlers, type PluginOptions, type RunningPlugin, type Tool, type ToolContext, type Command, type CommandContext, type Retriever, type RetrieveContext } from './plugin.js';
export { HostError, hostClient, messageText, type Host } from './host.js';
export {
  COMMAND_CALL_SCHEMA, HOST_REPLY_SCHEMA, HOST_STREAM_CHUNK_SCHEMA, RETRIEVE_CALL_SCHEMA, CONTRACT_VERSION, EVENT_NAMES, LIMITS, PLUGIN_ERROR_HEADER, SCHEMA_HEADER, TOOL_CALL_SCHEMA, pluginSubjects, subjectToken,
  type ContentElement, type EventName, type EventOf, type EventReply, type EventRequest, type LlmMessage,
  type MessageChain, type MessageComponent, type MessageReceivedEvent, type NormalMessageReceivedEvent,
  type NormalMessageRespondedEvent, type CommandSentEvent, type PluginEvent, type PromptPreProcessingEvent, type Registration,
  type ToolCallRequest, type ToolDeclaration, type ToolResult, type CommandCallRequest, type CommandDeclaration, type CommandResult,
  type HostErrorCode, type HostReply, type HostRequest, type RetrieverDeclaration, type RetrieveCallRequest, type RetrieveResult,
} from './wire.js';
