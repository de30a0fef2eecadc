// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { type ResolvedModel } from './model.js';
export { OpenAIClientPool } from './client-pool.js';
export { providerFor } from './providers/index.js';
export { UsageTally } from './usage.js';
export { ContentResult, ToolNotFoundError, emptyToolBox, filterToolBox, type ToolBox } from './tools.js';
export {
  ACTIVATE_TOOL_NAME, SANDBOX_TOOL_NAMES, describeExec, inboxPath, mergeToolBoxes, outboxPath, redactCommand,
  sandboxTools, takeOutbox, withInbox, type ExecRecord, type SandboxPort, type SandboxToolsOptions, type SkillCatalog, type SkillEntry,
} from './sandbox-tools.js';
export {
  runLocalAgent, runTelemetry, userFacingError, type AgentItem, type AgentOutcome,
} from './agent-loop.js';
export { FinalAnswerHold, toEventBody } from './events.js';
export { McpPool, McpSession, McpToolError, type McpServerConfig, type StdioServerSpec } from './mcp/index.js';
export {
  ExternalRunnerError, MAX_TBOX_RESPONSE_CHARS, RUNNER_SECRET_SETTINGS, deerflowText, isExternalRunner,
  langflowAnswer, runCoze, runDashscope, runDeerflow, runDify, runExternalRunner, runLangflow, runN8n,
  runTbox, runWeknora, str, type ExternalImage, type ExternalInput, type ExternalResult,
  type RunnerSettings, type TboxConfig,
} from './external/index.js';
export {
  RAG_COMBINED_PROMPT_TEMPLATE, ingestDocument, unitVector, withKnowledge,
} from './knowledge/index.js';
export { ImageFetcher, inlineImages, type ImageSource } from './attachments/index.js';
export { pluginToolBox, PluginToolFailure, type PluginToolPort, type PluginToolBoxOptions } from './plugin-tools.js';
export { HUMAN_REQUEST_TOOL, humanRequestToolBox } from './human-request-tool.js';
export { PluginHostApi, PluginHostError, type PipelineAccess, type PluginHostPorts } from './plugin-host-api.js';
