import type { LlmMessage, MessageChain, PluginEventName, PluginEventPayload, ReplyRoute, RunRequest } from '@conveyor/contracts';
import type { PluginCommand, PluginCommandCall, PluginEventOutcome } from '@conveyor/contracts';
import type { HumanHandoff, HumanRequestVia } from '@conveyor/contracts';
import type { PipelineQuery } from './query.js';

// What stages need from the outside world. The engine and stages depend only on these interfaces, so
// they run in unit tests without a broker; each service passes the adapters its side of the split needs.

export interface PipelineLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Where user notices and failures of a query go. */
export interface NoticeSink {
  userNotice(query: PipelineQuery, message: MessageChain): Promise<void>;
  markFailed(query: PipelineQuery, error: string): Promise<void>;
}

export interface OutboundReply {
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
}
export type SendResult = { delivered: true } | { delivered: false; reason: string };

/** The platform adapter's send path (SendResponseBackStage). */
export interface OutboundPort {
  send(route: ReplyRoute, reply: OutboundReply): Promise<SendResult>;
}

/** The chat's active conversation and its history (PreProcessor). */
export interface HistoryPort {
  load(query: PipelineQuery): Promise<{ conversationId: string; history: LlmMessage[] }>;
}

/** Model abilities (`vision`, `func_call`), or null for an unknown model. */
export interface ModelInfoPort {
  abilities(modelId: string): Promise<string[] | null>;
}

export type RateDecision = { allowed: true } | { allowed: false; retryInMs: number };

/** LangBot's fixed window, shared by every replica (RequireRateLimitOccupancy); a query counts once however often it is delivered. */
export interface RateLimiterPort {
  require(key: string, windowSeconds: number, limit: number, queryId: string): Promise<RateDecision>;
}

/** The query's session lease and pipeline slot, as a stage sees them. */
export interface LeasePort {
  /** Keeps the leases alive at least `ms` more (a deferred query keeps its place). */
  extend(query: PipelineQuery, ms: number): Promise<void>;
}

/** The chat path of MessageProcessor crosses the wire here: the runner produces the items. */
export interface HandoffPort {
  startRun(query: PipelineQuery, run: RunRequest): Promise<void>;
}

/**
 * LangBot's `plugin_connector.emit_event`: the plugins the query's pipeline binds, called for one
 * event. A plugin that fails or is too slow leaves the outcome as if it had not been called.
 */
export interface PluginPort {
  emit(query: PipelineQuery, event: PluginEventPayload): Promise<PluginEventOutcome>;
  /** Whether a plugin the query's pipeline binds would be called for the event now. */
  listens(query: PipelineQuery, event: PluginEventName): boolean;
  /** The commands of the live plugins the query's pipeline binds; of two with one name, the first plugin by name wins. */
  commands(query: PipelineQuery): PluginCommand[];
  /** Runs a plugin's command; throws with a message for the chat when the plugin gives no answer. */
  runCommand(query: PipelineQuery, command: string, call: Pick<PluginCommandCall, 'params' | 'text_message' | 'is_admin'>): Promise<string>;
}

/** Built-in commands' side effects. */
export interface CommandPort {
  resetConversation(query: PipelineQuery): Promise<boolean>;
}

/** The deployment's ban-word list, in LangBot's sensitive-words.json shape. */
export interface BanWords {
  mask: string;
  maskWord: string;
  words: string[];
}

/** Renders long text as a PNG (base64), or null when it cannot (then LangBot falls back to forward). */
export interface TextRenderer {
  render(text: string, fontPath: string): Promise<string | null>;
}

/** Whether an operator has taken a chat over: the pipeline then calls no model and runs no command for it. */
export interface TakeoverPort {
  isTakenOver(chat: { botId: string; launcherType: 'person' | 'group'; launcherId: string }): boolean;
}

/** A chat's request for a person, recorded for the operators (who are told once per waiting chat). */
export interface HumanRequestPort {
  /** The bot's settings for such requests. */
  settings: HumanHandoff;
  request(input: { chat: { botId: string; launcherType: 'person' | 'group'; launcherId: string }; via: HumanRequestVia; reason: string; queryId: string }): Promise<void>;
}

export interface PipelineDeps {
  logger: PipelineLogger;
  notices: NoticeSink;
  now?: () => Date;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  outbound?: OutboundPort;
  history?: HistoryPort;
  models?: ModelInfoPort;
  rateLimiter?: RateLimiterPort;
  leases?: LeasePort;
  handoff?: HandoffPort;
  commands?: CommandPort;
  /** Absent: no plugin runtime, every event passes unchanged. */
  plugins?: PluginPort;
  banWords?: BanWords;
  renderer?: TextRenderer;
  /** The `!`-commands' prefixes (LangBot's `command.prefix`); empty disables commands. */
  commandPrefixes?: string[];
  /** Chats (`person:<id>`, `group:<id>`) whose commands run with admin privilege (LangBot's bot admins). */
  commandAdmins?: ReadonlySet<string>;
  /** Chats operators answer instead of the bot (human takeover); absent: none are. */
  takeover?: TakeoverPort;
  /** The bot's way for a chat to ask for a person (its keywords here, its model tool in the run); absent: it has none. */
  humanRequests?: HumanRequestPort;
  /** Called for each stage result with the stage name, for metrics. */
  onStageResult?: (stage: string, result: 'continue' | 'interrupt') => void;
  /**
   * Whether an error means a dependency (Redis, Postgres, the bus) is briefly down. Such an error is
   * not the user's failure: it leaves the pipeline unhandled, so the message is retried, instead of
   * becoming the failure notice.
   */
  isOutage?: (err: unknown) => boolean;
}

export function need<K extends keyof PipelineDeps>(deps: PipelineDeps, key: K, stage: string): NonNullable<PipelineDeps[K]> {
  const v = deps[key];
  if (v === undefined || v === null) throw new Error(`${stage} needs the ${String(key)} port, which this service does not provide`);
  return v as NonNullable<PipelineDeps[K]>;
}
