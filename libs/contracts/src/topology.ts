/**
 * Subject, stream and consumer names: a public contract on the broker. Renaming one needs a migration
 * plan (old streams keep their data under the old name), which is why every name carries a version.
 *
 * Everything is derived from one prefix so that tests (and tenants) can run isolated side by side on
 * one NATS server.
 */
export const CONTRACT_VERSION = 'v1';

export type StreamRetention = 'workqueue' | 'limits' | 'interest';

export interface StreamSpec {
  name: string;
  subjects: string[];
  retention: StreamRetention;
  /** Oldest message kept, in milliseconds. */
  maxAgeMs: number;
  /** Window in which a repeated Nats-Msg-Id is dropped, in milliseconds. */
  duplicateWindowMs: number;
  maxBytes: number;
  maxMsgSize: number;
}

export interface ConsumerSpec {
  stream: string;
  durable: string;
  filterSubject: string;
  /** How long the server waits for an ack (or a working() heartbeat) before redelivering. */
  ackWaitMs: number;
  maxDeliver: number;
  /** Unacked messages the consumer hands out across all replicas. */
  maxAckPending: number;
}

export interface Topology {
  prefix: string;
  streams: {
    queries: StreamSpec;
    runs: StreamSpec;
    events: StreamSpec;
    deadLetters: StreamSpec;
    /** JetStream's MAX_DELIVERIES advisories of the runner's consumer, kept until a runner handles them. */
    runAdvisories: StreamSpec;
    /** Knowledge base documents to chunk and embed. */
    ingest: StreamSpec;
  };
  consumers: {
    orchestrator: ConsumerSpec;
    runner: ConsumerSpec;
    dispatcher: ConsumerSpec;
    /** The runner's second consumer: runs JetStream gave up on, to tell their users. */
    runAdvisories: ConsumerSpec;
    /** The runner's third consumer: knowledge base ingestion jobs (it holds the model keys). */
    ingest: ConsumerSpec;
  };
  subjects: {
    /** An inbound message accepted by the ingress. */
    query(botId: string): string;
    /** A request for the runner to produce a reply. */
    run(botId: string): string;
    /** A runner event (chunk, message, error, done) or a notice on its way to the dispatcher. */
    event(botId: string): string;
    /** A message that could not be processed, with the reason. `source` names the consumer that gave up. */
    deadLetter(source: string): string;
    /** An ingestion job for a document of this knowledge base. */
    ingest(knowledgeBaseId: string): string;
    /** Wildcards, for tools and tests. */
    allDeadLetters: string;
    /** Wildcard over every ingress replica's `syncReply` subject (server permissions). */
    allSyncReplies: string;
    /** Wildcard over every web chat session's `webchat` subject (server permissions). */
    allWebchatSessions: string;
    /**
     * Core NATS (not JetStream): reply parts for a waiting HTTP-bot `/sync` call,
     * addressed to the ingress replica that holds it. Request/reply: the ingress answers when it took the part.
     */
    syncReply(ingressInstance: string): string;
    /** Core NATS: reply parts for a web chat session, to the ingress streaming it to the browser. */
    webchat(botId: string, sessionId: string): string;
    /**
     * Core NATS, between dispatcher replicas: the runner events (`SentNotice`) whose parts one replica
     * sent, so the replica that handled an event acknowledges it at once, without asking Redis.
     */
    dispatchSent: string;
    /**
     * Core NATS request/reply: a message to a chat that answers nothing (`DirectSendRequest` →
     * `DirectSendReply`, libs/contracts/src/direct-send.ts), sent by a dispatcher replica (queue group `direct-send`).
     */
    directSend: string;
    /** Core NATS: `TakeoverEvent`, a chat was taken over by an operator, handed back, or answered by one. */
    takeoverEvents: string;
    /** Core NATS: the plugin runtime (libs/contracts/src/plugins.ts). */
    plugins: PluginSubjects;
    /**
     * Core NATS request/reply: a reply part for a bot whose platform connection a gateway replica holds
     * (`GatewaySendRequest` → `GatewaySendReply`). Only the replica owning the bot's connection listens.
     */
    gatewaySend(botId: string): string;
    /** Wildcard over every bot's `gatewaySend` subject (server permissions). */
    allGatewaySends: string;
    /** Core NATS: `ConfigChanged` (libs/contracts/src/config-events.ts), a configuration row was written. */
    configChanged: string;
    /**
     * Core NATS request/reply: one operation on a workspace (`SandboxRequest` → `SandboxReply`,
     * libs/contracts/src/sandbox.ts). Every sandbox replica listens in the queue group `sandbox`.
     */
    sandboxCall: string;
    /**
     * Core NATS request/reply: start a stdio MCP server inside the sandbox (`SandboxMcpOpen` →
     * `SandboxMcpOpenReply`). Every sandbox replica listens in the queue group `sandbox`; the one that
     * answers runs the process until it exits or goes unused.
     */
    sandboxMcpOpen: string;
    /** Core NATS request/reply: one JSON-RPC message (or a keepalive) to a running MCP process (`SandboxMcpInput`). */
    sandboxMcpInput(processId: string): string;
    /** Core NATS: what an MCP process wrote, one JSON-RPC message each, and its exit (`SandboxMcpOutput`). */
    sandboxMcpOutput(processId: string): string;
    /** Wildcards over every process's input and output subjects (server permissions). */
    allSandboxMcpInputs: string;
    allSandboxMcpOutputs: string;
    /**
     * The inbox prefix of a role's connections: replies to its requests (PubAcks, JetStream API
     * answers, pulled messages) arrive under `<prefix>.>`, which only that role may subscribe to,
     * so no role reads another's replies.
     */
    inboxPrefix(role: string): string;
  };
}

export interface PluginSubjects {
  /** Plugins publish their `PluginRegistration` here, again before it expires. */
  heartbeat: string;
  /** A host starting up publishes `PluginDiscover` here; every plugin answers with its heartbeat at once. */
  discover: string;
  /** Request/reply: where a plugin answers events; its instances subscribe in the queue group `name`. */
  call(pluginName: string): string;
  /** Wildcard over every plugin's call subject (server permissions). */
  allCalls: string;
  /**
   * Request/reply: a plugin's calls into Conveyor (`PluginHostRequest/1` → `PluginHostReply/1`), on a
   * subject of its own, so a server that gives each plugin its own user tells who is calling. Runner
   * replicas answer in the queue group `plugin-host`.
   */
  host(pluginName: string): string;
  /** Wildcard over every plugin's host subject (the runners' subscription, server permissions). */
  allHosts: string;
  /**
   * The inbox prefix of a plugin's connection: answers to its host calls (several for a streamed one)
   * arrive under `<prefix>.>`, which only that plugin's user may subscribe to.
   */
  inboxPrefix(pluginName: string): string;
  /** Wildcard over every plugin's inbox (the shared plugin user's subscription, the runners' publish right). */
  allInboxes: string;
  /** Core NATS: `PluginSettingsChanged`, an admin changed this plugin's settings. */
  settingsChanged(pluginName: string): string;
  /** Wildcard over every plugin's settings subject (the admin's publish right, the shared plugin user's subscription). */
  allSettingsChanged: string;
}

/** The plugin runtime's subjects, also built by the plugin SDK (which must agree: a test compares them). */
export function pluginSubjects(prefix: string): PluginSubjects {
  assertPrefix(prefix);
  const base = `${prefix}.${CONTRACT_VERSION}.plugin`;
  return {
    heartbeat: `${base}.heartbeat`,
    discover: `${base}.discover`,
    call: (pluginName) => `${base}.call.${subjectToken(pluginName)}`,
    allCalls: `${base}.call.*`,
    host: (pluginName) => `${base}.host.${subjectToken(pluginName)}`,
    allHosts: `${base}.host.*`,
    inboxPrefix: (pluginName) => `_INBOX_${prefix.replace(/-/g, '_')}.plugin.${subjectToken(pluginName)}`,
    allInboxes: `_INBOX_${prefix.replace(/-/g, '_')}.plugin.>`,
    settingsChanged: (pluginName) => `${base}.settings.${subjectToken(pluginName)}`,
    allSettingsChanged: `${base}.settings.*`,
  };
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const MIB = 1024 * 1024;

/** Subject tokens may not contain separators or wildcards; ids from the outside world are escaped. */
export function subjectToken(raw: string): string {
  const token = raw.replace(/[^A-Za-z0-9_-]/g, (c) => '~' + c.charCodeAt(0).toString(16).padStart(2, '0'));
  if (token.length === 0) throw new Error('subject token must not be empty');
  return token;
}

export function assertPrefix(prefix: string): void {
  if (!/^[a-z][a-z0-9_-]{0,63}$/.test(prefix)) {
    throw new Error(`subject prefix ${JSON.stringify(prefix)} must match ^[a-z][a-z0-9_-]{0,63}$`);
  }
}

/**
 * How long a missing reply event may hold back the events after it before the dispatcher takes it as
 * lost: one and a half of the dispatcher consumer's ack wait, time for an event a killed replica had
 * pulled to be redelivered and stored, and no longer, since a reply whose Redis state was lost holds
 * its session's next message that long.
 */
export function replyEventGapMs(t: Pick<Topology, 'consumers'>): number {
  return Math.ceil(t.consumers.dispatcher.ackWaitMs * 1.5);
}

export function topology(prefix = 'conveyor'): Topology {
  assertPrefix(prefix);
  const base = `${prefix}.${CONTRACT_VERSION}`;
  const streamBase = `${prefix.toUpperCase().replace(/-/g, '_')}_${CONTRACT_VERSION.toUpperCase()}`;
  const durableBase = `${prefix.replace(/_/g, '-')}-${CONTRACT_VERSION}`;
  const streams = {
    // Work queues: a message leaves the stream once its one consumer acks it.
    queries: {
      name: `${streamBase}_QUERIES`,
      subjects: [`${base}.query.>`],
      retention: 'workqueue',
      maxAgeMs: DAY,
      duplicateWindowMs: 10 * MINUTE,
      maxBytes: 1024 * MIB,
      maxMsgSize: 1 * MIB,
    },
    runs: {
      name: `${streamBase}_RUNS`,
      subjects: [`${base}.run.>`],
      retention: 'workqueue',
      maxAgeMs: DAY,
      duplicateWindowMs: 10 * MINUTE,
      maxBytes: 1024 * MIB,
      maxMsgSize: 1 * MIB,
    },
    events: {
      name: `${streamBase}_EVENTS`,
      subjects: [`${base}.event.>`],
      retention: 'workqueue',
      maxAgeMs: HOUR,
      duplicateWindowMs: 2 * MINUTE,
      maxBytes: 1024 * MIB,
      maxMsgSize: 1 * MIB,
    },
    // Kept for inspection and replay by an operator; limits-based so reading does not remove.
    deadLetters: {
      name: `${streamBase}_DEAD_LETTERS`,
      subjects: [`${base}.dlq.>`],
      retention: 'limits',
      maxAgeMs: 14 * DAY,
      duplicateWindowMs: 2 * MINUTE,
      maxBytes: 256 * MIB,
      maxMsgSize: 1 * MIB,
    },
    // The server publishes an advisory once, to whoever listens at that moment (possibly nobody: it
    // fires while serving a dead runner's open pull). Stored, it waits for a runner to start.
    runAdvisories: {
      name: `${streamBase}_RUN_ADVISORIES`,
      subjects: [`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${streamBase}_RUNS.${durableBase}-runner`],
      retention: 'workqueue',
      maxAgeMs: DAY,
      duplicateWindowMs: 2 * MINUTE,
      maxBytes: 64 * MIB,
      maxMsgSize: 64 * 1024,
    },
    // Jobs are small (a document id); the document's bytes stay in Postgres.
    ingest: {
      name: `${streamBase}_INGEST`,
      subjects: [`${base}.ingest.>`],
      retention: 'workqueue',
      maxAgeMs: 7 * DAY,
      duplicateWindowMs: 10 * MINUTE,
      maxBytes: 64 * MIB,
      maxMsgSize: 64 * 1024,
    },
  } satisfies Record<string, StreamSpec>;
  const consumer = (stream: StreamSpec, name: string, ackWaitMs: number, maxAckPending: number): ConsumerSpec => ({
    stream: stream.name,
    durable: `${durableBase}-${name}`,
    filterSubject: stream.subjects[0],
    ackWaitMs,
    maxDeliver: 5,
    maxAckPending,
  });
  return {
    prefix,
    streams,
    consumers: {
      orchestrator: consumer(streams.queries, 'orchestrator', 30_000, 1_000),
      // A run may take minutes; the runner sends working() heartbeats well inside this window.
      runner: consumer(streams.runs, 'runner', 60_000, 10_000),
      // Short, so an event a killed dispatcher had pulled comes back well inside the deliverer's gap
      // (the time a missing event may hold back the ones after it); handlers send heartbeats meanwhile.
      dispatcher: consumer(streams.events, 'dispatcher', 10_000, 10_000),
      runAdvisories: consumer(streams.runAdvisories, 'runner-advisories', 60_000, 1_000),
      // Embedding a large document takes minutes; the handler sends heartbeats.
      ingest: consumer(streams.ingest, 'ingester', 60_000, 1_000),
    },
    subjects: {
      query: (botId) => `${base}.query.${subjectToken(botId)}`,
      run: (botId) => `${base}.run.${subjectToken(botId)}`,
      event: (botId) => `${base}.event.${subjectToken(botId)}`,
      ingest: (knowledgeBaseId) => `${base}.ingest.${subjectToken(knowledgeBaseId)}`,
      deadLetter: (source) => `${base}.dlq.${subjectToken(source)}`,
      allDeadLetters: `${base}.dlq.>`,
      allSyncReplies: `${base}.sync.*`,
      allWebchatSessions: `${base}.webchat.*.*`,
      syncReply: (ingressInstance) => `${base}.sync.${subjectToken(ingressInstance)}`,
      webchat: (botId, sessionId) => `${base}.webchat.${subjectToken(botId)}.${subjectToken(sessionId)}`,
      dispatchSent: `${base}.dispatch.sent`,
      directSend: `${base}.dispatch.direct`,
      takeoverEvents: `${base}.takeover.events`,
      plugins: pluginSubjects(prefix),
      gatewaySend: (botId) => `${base}.gateway.send.${subjectToken(botId)}`,
      allGatewaySends: `${base}.gateway.send.*`,
      configChanged: `${base}.config.changed`,
      sandboxCall: `${base}.sandbox.call`,
      sandboxMcpOpen: `${base}.sandbox.mcp.open`,
      sandboxMcpInput: (processId) => `${base}.sandbox.mcp.${subjectToken(processId)}.in`,
      sandboxMcpOutput: (processId) => `${base}.sandbox.mcp.${subjectToken(processId)}.out`,
      allSandboxMcpInputs: `${base}.sandbox.mcp.*.in`,
      allSandboxMcpOutputs: `${base}.sandbox.mcp.*.out`,
      inboxPrefix: (role) => `_INBOX_${prefix.replace(/-/g, '_')}_${subjectToken(role)}`,
    },
  };
}
