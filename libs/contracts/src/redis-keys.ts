import { chatKey, type ChatRef } from './chat-key.js';

/** A session is a chat: its keys are built from `chatKey`, so the web chat's sessions stay apart from the platform's. */
export type SessionKey = ChatRef;

/**
 * Where a session's replies are ordered and numbered: per bot, adapter and platform session, so the
 * web chat's session "alice" never waits behind (or shares callback numbers with) a platform's "alice".
 */
export interface ReplySessionKey {
  botId: string;
  adapter: ChatRef['adapter'];
  sessionId: string;
}

/**
 * Every Redis key Conveyor uses, built in one place from the subject prefix (as `topology(prefix)`
 * builds every subject), so tests run isolated side by side and a key's shape is changed once.
 * Keys of one session share the `{…}` hash tag of the session, so a script touching several of them
 * stays on one slot of a Redis Cluster.
 */
export function redisKeys(prefix: string) {
  const session = (s: SessionKey) => {
    const k = chatKey(s);
    return `${prefix}:session:{${k.botId}:${k.launcherType}:${k.launcherId}}`;
  };
  const replySession = (s: ReplySessionKey) => `${prefix}:dlv:s:{${s.botId}:${s.adapter}:${s.sessionId}}`;
  return {
    /** Per-session order of queries (orchestrator) and the cluster-wide pipeline cap. */
    sessionQueue: (s: SessionKey) => `${session(s)}:queue`,
    sessionLease: (s: SessionKey) => `${session(s)}:lease`,
    sessionFirstSeen: (s: SessionKey) => `${session(s)}:first-seen`,
    sessionLastSeen: (s: SessionKey) => `${session(s)}:last-seen`,
    /** Queries whose reply ended: a redelivered copy must not take the session again. */
    sessionFinished: (s: SessionKey) => `${session(s)}:finished`,
    /** Message aggregation: envelopes of queued messages, when the newest came, what a head merged. */
    sessionAggregatePending: (s: SessionKey) => `${session(s)}:agg:pending`,
    sessionAggregateNewest: (s: SessionKey) => `${session(s)}:agg:newest`,
    sessionAggregateMerged: (s: SessionKey, queryId: string) => `${session(s)}:agg:merged:${queryId}`,
    pipelineSlots: () => `${prefix}:pipeline-slots`,
    /**
     * A pub/sub channel, not a key: the release script publishes a session's lease key on it when it
     * frees a session or a pipeline slot, so waiting queries ask again at once instead of polling.
     */
    sessionFreedChannel: () => `${prefix}:session-freed`,
    /**
     * A pub/sub channel, not a key: the register script publishes a session's lease key on it when it
     * registers a message the orchestrator already saw, which then is settling and may run at once.
     */
    sessionRegisteredChannel: () => `${prefix}:session-registered`,
    /** Admin sign-in attempts not yet proven good, of one user name from one client address, in the current window. */
    adminLoginAttempts: (username: string, address: string) => `${prefix}:admin:login-attempts:${username}:${address}`,
    /** Admin sign-in (`login`) or setup (`setup`) attempts from one client address, in the current window. */
    adminAddressAttempts: (kind: 'login' | 'setup', address: string) => `${prefix}:admin:${kind}-attempts-from:${address}`,
    /** LangBot's fixed rate-limit window. */
    rateLimitWindow: (key: string) => `${prefix}:ratelimit:${key}`,
    /** One reply's delivery state: attempt, position, waiting parts, seals, the batch being sent. */
    reply: (queryId: string) => `${prefix}:dlv:r:${queryId}`,
    /** Per-reply state a platform adapter keeps (Telegram: the message being edited). */
    replyAdapterState: (queryId: string) => `${prefix}:dlv:r:${queryId}:a`,
    /** Prefix the delivery scripts append a query id to (the key `reply(queryId)`). */
    replyPrefix: () => `${prefix}:dlv:r:`,
    /** A session's replies in arrival order, the lease of the replica sending them, its callback numbering. */
    replySessionReplies: (s: ReplySessionKey) => `${replySession(s)}:replies`,
    replySessionSender: (s: ReplySessionKey) => `${replySession(s)}:sender`,
    replySessionSequence: (s: ReplySessionKey) => `${replySession(s)}:seq`,
    /** Sessions with undelivered parts, scored by their last activity (the takeover sweep reads it). */
    replyActiveSessions: () => `${prefix}:dlv:active`,
    /** Whether a query already streamed a chunk (a later notice then goes out on the stream). */
    streamed: (queryId: string) => `${prefix}:streamed:${queryId}`,
    /** The ingress replica holding a `/sync` call of the session. */
    syncWaiter: (botId: string, sessionId: string) => `${prefix}:sync:${botId}:${sessionId}`,
    /** How many times a query's run was started: its attempt numbers, rising even when delivery counts do not. */
    runAttempts: (queryId: string) => `${prefix}:run-attempts:${queryId}`,
    /** Span context of a run attempt, to link a redelivered run to the one that died. */
    attemptSpan: (key: string) => `${prefix}:attempt-span:${key}`,
    /** Conversation id an external runner (Dify, n8n) gave to a Conveyor conversation. */
    externalConversation: (kind: string, conversationId: string) => `${prefix}:extconv:${kind}:${conversationId}`,
    /** The gateway replica holding a bot's live platform connection (`<owner>|<token>`), with a TTL it renews. */
    connectionLease: (botId: string) => `${prefix}:gw:{${botId}}:lease`,
    /** The bot's fencing token counter: only rises, never expires, so a later owner always holds a larger token. */
    connectionFence: (botId: string) => `${prefix}:gw:{${botId}}:fence`,
    /**
     * What a bot's held connection keeps for the replica holding it next (Discord: the session to
     * resume); written only by the lease holder, expiring a while after the lease.
     */
    connectionState: (botId: string) => `${prefix}:gw:{${botId}}:state`,
    /**
     * A webhook credential a platform accepts once (DingTalk's `timestamp` and `sign`, which do not
     * cover the body): set NX by the ingress replica that takes the delivery, expiring with the
     * credential's validity, so a captured pair replayed with another body is refused on any replica.
     */
    webhookOnce: (adapter: string, botId: string, id: string) => `${prefix}:webhook-once:{${botId}}:${adapter}:${id}`,
    /** A reply part a gateway already handed to the platform, so a retried send is not shown twice. */
    gatewaySent: (botId: string, partId: string) => `${prefix}:gw:{${botId}}:sent:${partId}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
