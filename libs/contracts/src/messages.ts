import { z } from 'zod';
import { ChatAttachment, SandboxBinding, SANDBOX_LIMITS } from './sandbox.js';
import { LIMITS } from './limits.js';
import { MessageChainSchema } from './message-chain.js';
import { LlmMessage } from './llm-message.js';
import { PluginName } from './plugins.js';

/**
 * Every bus message carries `v` so a consumer can tell a newer producer's message from garbage,
 * and is validated at the consumer: a message that fails goes to the dead letters with the reason.
 */
const V1 = z.literal(1);
const Id = z.string().min(1).max(200);

export const LauncherType = z.enum(['person', 'group']);

/** How an adapter name looks; which names exist is the platform registry's business (libs/platforms/registry). */
export const ADAPTER_NAME_RE = /^[a-z][a-z0-9-]{0,31}$/;
/**
 * A platform's adapter name (`http-bot`, `telegram`, `webchat`, ...). A string checked for shape only,
 * so a new platform needs no change here: the ingress only routes bots of registered platforms, and
 * the dispatcher dead-letters a route whose adapter it has no platform for.
 */
export const AdapterName = z.string().regex(ADAPTER_NAME_RE, 'an adapter name: lower-case letters, digits and -');
export type AdapterName = z.infer<typeof AdapterName>;
export type LauncherType = z.infer<typeof LauncherType>;

/** Where replies for a query go: enough for any dispatcher replica to address the platform. */
export const ReplyRoute = z.object({
  botId: Id,
  /** The platform the message came through and the replies go to (see AdapterName). */
  adapter: AdapterName,
  /** The platform's conversation id (HTTP-bot `session_id`). */
  sessionId: z.string().max(1000),
  launcherType: LauncherType,
  launcherId: z.string().max(1000),
  senderId: z.string().max(1000),
  /** The inbound message id the replies answer (HTTP-bot `reply_to`). */
  replyTo: z.string().max(200),
  /**
   * Whether the platform shows streamed replies, decided by the ingress from the bot's adapter and its
   * config (LangBot's `is_stream_output_supported`); absent means the adapter's default.
   */
  stream: z.boolean().optional(),
});
export type ReplyRoute = z.infer<typeof ReplyRoute>;

export const QueryEnvelope = z.object({
  v: V1,
  queryId: z.uuid(),
  receivedAt: z.iso.datetime(),
  route: ReplyRoute,
  senderName: z.string().max(LIMITS.nameChars),
  groupName: z.string().max(LIMITS.nameChars).optional(),
  messageChain: MessageChainSchema,
}).meta({ id: 'QueryEnvelope/1' });
export type QueryEnvelope = z.infer<typeof QueryEnvelope>;

/**
 * LangBot's per-model reasoning levels (`ai.local-agent.model.reasoning`, model id → level):
 * `provider_default` sends nothing, `disabled` turns thinking off, `enabled` on at the provider's
 * usual depth, the others pick a depth. Each provider maps them onto its own parameter.
 */
export const ReasoningLevel = z.enum(['provider_default', 'disabled', 'enabled', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
export type ReasoningLevel = z.infer<typeof ReasoningLevel>;

export const ModelSelection = z.object({
  primary: z.string().max(200),
  fallbacks: z.array(z.string().max(200)).max(16).default([]),
  /** Reasoning level per model id; a model not named uses `provider_default`. */
  reasoning: z.record(z.string().max(200), ReasoningLevel).optional(),
});
export type ModelSelection = z.infer<typeof ModelSelection>;

/**
 * Which tools a run may use (LangBot: the pipeline's bound MCP servers, `local-agent.enable-all-tools`
 * and `local-agent.tools`). Absent means LangBot's defaults: every enabled MCP server, every tool.
 */
export const ToolBinding = z.object({
  /** `all` enabled MCP servers, or these McpServer ids. */
  mcpServers: z.union([z.literal('all'), z.array(Id).max(256)]).default('all'),
  enableAllTools: z.boolean().default(true),
  /** Tool names offered when enableAllTools is false. */
  tools: z.array(z.string().max(200)).max(1024).default([]),
  /** `all` running plugins (also when absent), or these `author/name`s: whose tools the run is offered (LangBot binds plugins per pipeline). */
  plugins: z.union([z.literal('all'), z.array(PluginName).max(256)]).optional(),
});
export type ToolBinding = z.infer<typeof ToolBinding>;

/**
 * Knowledge bases a local-agent run retrieves from before the model is called (LangBot's
 * `ai.local-agent.knowledge-bases`, `rerank-model` and `rerank-top-k`). Only ids travel: the retrieved
 * text joins the user turn inside the runner, so the run request stays within the bus bound.
 */
export const KnowledgeBinding = z.object({
  knowledgeBaseIds: z.array(Id).min(1).max(LIMITS.knowledgeBasesPerRun),
  /** LlmModel id of a rerank model; empty means the knowledge bases' own (or none). */
  rerankModel: z.string().max(200).default(''),
  rerankTopK: z.number().int().min(0).max(LIMITS.rerankDocuments).default(5),
});
export type KnowledgeBinding = z.infer<typeof KnowledgeBinding>;

/** `ai.runner.runner`: the runners Conveyor implements. External runners read their settings (and secrets) from the pipeline row. */
export const RunnerKind = z.enum(['local-agent', 'dify-service-api', 'n8n-service-api', 'coze-api', 'langflow-api', 'dashscope-app-api', 'weknora-api', 'deerflow-api', 'tbox-app-api']);
export type RunnerKind = z.infer<typeof RunnerKind>;

export const RunRequest = z.object({
  v: V1,
  queryId: z.uuid(),
  pipelineId: Id,
  route: ReplyRoute,
  conversationId: Id,
  /** The model configuration ids; the runner resolves them (and their secrets) itself. */
  model: ModelSelection,
  /** Whether the platform shows streamed replies. */
  stream: z.boolean(),
  /** System prompt, history and the current user turn, in order. */
  messages: z.array(LlmMessage).min(1).max(10_000),
  exceptionHandling: z.enum(['show-error', 'show-hint', 'hide']),
  failureHint: z.string().max(10_000),
  /** Which runner executes the run; absent means `local-agent` (optional so older producers stay valid). */
  runner: RunnerKind.optional(),
  /** Which tools the run may use; absent means every enabled MCP server and every tool. */
  tools: ToolBinding.optional(),
  /** `output.misc.remove-think`; absent means false. */
  removeThink: z.boolean().optional(),
  /** `ai.runner.expire-time` in seconds for an external runner's conversation id; 0 or absent means never. */
  externalConversationTtlSeconds: z.number().int().min(0).max(31_536_000).optional(),
  /** Retrieval before the model call; absent means no knowledge base is bound. */
  knowledge: KnowledgeBinding.optional(),
  /** The sandbox tools (exec, read, write, edit, glob, grep, activate) and their workspace; absent means none. */
  sandbox: SandboxBinding.optional(),
  /** The bot lets the model ask for a person: the runner offers `request_human`; absent means it does not. */
  humanRequestTool: z.literal(true).optional(),
}).meta({ id: 'RunRequest/1' });
export type RunRequest = z.infer<typeof RunRequest>;

/**
 * What a runner produced, one event per item. `attempt` is the JetStream delivery of the run that
 * produced it and `seq` its position within that attempt: a dispatcher drops events of an attempt
 * older than one it has seen, so a run restarted on another replica yields one clean reply.
 */
const RunnerEventBase = z.object({
  v: V1,
  queryId: z.uuid(),
  route: ReplyRoute,
  attempt: z.number().int().min(1),
  seq: z.number().int().min(0),
  /**
   * The run's last event: no `done` follows it. A runner marks the final answer so (after writing the
   * turn to history), which saves a whole event per reply on every hop.
   */
  last: z.literal(true).optional(),
});

export const RunnerEvent = z.discriminatedUnion('kind', [
  RunnerEventBase.extend({
    kind: z.literal('chunk'),
    /** Cumulative text of the current model round. */
    text: z.string(),
    isFinal: z.boolean(),
    hasToolCalls: z.boolean().default(false),
    /** Names of the tools the round calls (for ResponseWrapper's `Call a.b...`), when hasToolCalls. */
    toolNames: z.array(z.string()).optional(),
    /** Files the agent left in its sandbox outbox, sent with the final answer. */
    attachments: z.array(ChatAttachment).max(SANDBOX_LIMITS.transferFiles).optional(),
  }),
  RunnerEventBase.extend({ kind: z.literal('message'), message: LlmMessage, attachments: z.array(ChatAttachment).max(SANDBOX_LIMITS.transferFiles).optional() }),
  RunnerEventBase.extend({
    kind: z.literal('tool_result'),
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
  }),
  RunnerEventBase.extend({
    kind: z.literal('error'),
    /** Text meant for logs and `show-error`; never a secret. */
    error: z.string().max(10_000),
    /** What the user is shown, already chosen by the exception-handling setting; null means nothing. */
    userText: z.string().max(10_000).nullable(),
  }),
  RunnerEventBase.extend({ kind: z.literal('done') }),
  /** A user-facing notice from a stage that ran before the runner (rate limit, filter, command). */
  RunnerEventBase.extend({ kind: z.literal('notice'), text: z.string().max(10_000) }),
  /** A built-in command's reply, an item of MessageProcessor produced by the orchestrator in place. */
  RunnerEventBase.extend({ kind: z.literal('command_reply'), text: z.string().max(100_000) }),
  /** A plugin's reply chain that replaces the runner's answer (prevent_default with reply_message_chain). */
  RunnerEventBase.extend({ kind: z.literal('plugin_reply'), chain: MessageChainSchema }),
]).meta({ id: 'RunnerEvent/1' });
export type RunnerEvent = z.infer<typeof RunnerEvent>;
export type RunnerEventKind = RunnerEvent['kind'];

/**
 * Cut a knowledge base document into chunks and embed them. The document (its bytes, its state) is in
 * Postgres; the job names it and the revision it was added at, so a job for replaced content is dropped.
 */
export const IngestJob = z.object({
  v: V1,
  documentId: Id,
  revision: z.number().int().min(1),
}).meta({ id: 'IngestJob/1' });
export type IngestJob = z.infer<typeof IngestJob>;

export const DeadLetter = z.object({
  v: V1,
  /** The consumer that gave up, e.g. `orchestrator`. */
  source: z.string(),
  stream: z.string(),
  subject: z.string(),
  deliveryCount: z.number().int(),
  reason: z.enum(['invalid_payload', 'max_deliver', 'handler_rejected', 'payload_too_large']),
  error: z.string().max(10_000),
  /** The offending payload's raw bytes, base64, cut to LIMITS.deadLetterPayloadBytes. */
  payloadBase64: z.string(),
  payloadTruncated: z.boolean(),
  traceId: z.string().optional(),
  failedAt: z.iso.datetime(),
}).meta({ id: 'DeadLetter/1' });
export type DeadLetter = z.infer<typeof DeadLetter>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A runner event without the envelope fields the publisher fills in. */
export type RunnerEventBody = DistributiveOmit<z.input<typeof RunnerEvent>, 'v' | 'queryId' | 'route' | 'attempt' | 'seq'>;

/**
 * JetStream's MAX_DELIVERIES advisory (`io.nats.jetstream.advisory.v1.max_deliver`), as stored in the
 * run-advisories stream: the stream sequence of the message the server gave up on. Other fields pass.
 */
export const MaxDeliveriesAdvisory = z.looseObject({
  stream_seq: z.number().int().positive(),
  deliveries: z.number().int().nonnegative(),
}).meta({ id: 'MaxDeliveriesAdvisory/1' });
export type MaxDeliveriesAdvisory = z.infer<typeof MaxDeliveriesAdvisory>;

/**
 * Runner events whose parts a dispatcher replica sent (subject `dispatchSent`), as (query, attempt,
 * seq). At most one batch's worth: a batch holds at most a few hundred events.
 */
export const SentNotice = z.object({
  v: V1,
  events: z.array(z.object({ queryId: Id, attempt: z.number().int().min(0), seq: z.number().int().min(0) })).max(1_000),
});
export type SentNotice = z.infer<typeof SentNotice>;
