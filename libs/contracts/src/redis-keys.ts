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
 * How the per-message keys are spread over the hash slots of a Redis Cluster. Every script's keys
 * share one slot, so the keys a script touches together carry one `{…}` hash tag:
 *
 * - A session's queue and lease share their tag with the pipeline slots they are counted in and with
 *   its chat's rate window. The cluster-wide pipeline cap is one sorted set only while
 *   `pipelineShards` is 1: every session's keys are then in one slot (exact cap, one node of a
 *   cluster carrying all session state). With S shards
 *   a session's keys and its shard's slot set carry the shard's tag, and the cap is split into S
 *   parts (`pipelineShardCap`): a burst on one shard waits while another has room.
 * - A reply session's keys, its replies' state and the set of sessions with work share the tag of
 *   one of `REPLY_SHARDS` delivery shards; the takeover sweep reads every shard's set. This costs
 *   nothing but the sweep's reads, so it is not a setting.
 *
 * Every process must use the same layout: the keys' names depend on it.
 */
export interface RedisKeyLayout {
  /** Parts the pipeline cap is split into (1 to the cap itself). */
  pipelineShards: number;
}

export const DEFAULT_KEY_LAYOUT: RedisKeyLayout = { pipelineShards: 1 };

/** Delivery shards (hash tags) the reply sessions are spread over. */
export const REPLY_SHARDS = 32;

/** FNV-1a: a stable, fast string hash that runs in the browser too (the console imports contracts). */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The pipeline cap's part shard `shard` of `shards` admits: the cap split as evenly as it goes. */
export function pipelineShardCap(cap: number, shards: number, shard: number): number {
  return Math.floor(cap / shards) + (shard < cap % shards ? 1 : 0);
}

/**
 * Every Redis key Conveyor uses, built in one place from the subject prefix (as `topology(prefix)`
 * builds every subject), so tests run isolated side by side and a key's shape is changed once.
 */
export function redisKeys(prefix: string, layout: RedisKeyLayout = DEFAULT_KEY_LAYOUT) {
  const shards = layout.pipelineShards;
  if (!Number.isInteger(shards) || shards < 1) throw new Error(`pipelineShards must be a positive integer (got ${shards})`);
  const pipelineShard = (s: SessionKey): number => {
    if (shards === 1) return 0;
    const k = chatKey(s);
    return fnv1a(`${k.botId}\0${k.launcherType}\0${k.launcherId}`) % shards;
  };
  const pipelineTag = (shard: number) => `${prefix}:{p${shard}}`;
  const session = (s: SessionKey) => {
    const k = chatKey(s);
    // Only the first {…} of a key is its hash tag: the second delimits the session's identity.
    return `${pipelineTag(pipelineShard(s))}:session:{${k.botId}:${k.launcherType}:${k.launcherId}}`;
  };
  const replyShard = (s: ReplySessionKey) => fnv1a(`${s.botId}\0${s.adapter}\0${s.sessionId}`) % REPLY_SHARDS;
  const replyTag = (shard: number) => `${prefix}:dlv:{d${shard}}`;
  const replySession = (s: ReplySessionKey) => `${replyTag(replyShard(s))}:s:{${s.botId}:${s.adapter}:${s.sessionId}}`;
  const reply = (s: ReplySessionKey, queryId: string) => `${replySession(s)}:r:${queryId}`;
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
    /** The session's shard of the pipeline cap, and the slots held in it (zset: query id → expiry). */
    pipelineShard,
    pipelineSlots: (s: SessionKey) => `${pipelineTag(pipelineShard(s))}:pipeline-slots`,
    /** Every shard's slot set, for reading the whole cap's use. */
    allPipelineSlots: () => Array.from({ length: shards }, (_, n) => `${pipelineTag(n)}:pipeline-slots`),
    /**
     * The pipeline shard a key built here under a shard's tag belongs to (a session's lease, as the
     * scripts name a session in their notices); undefined for any other key.
     */
    pipelineShardOfKey: (key: string): number | undefined => {
      const start = `${prefix}:{p`;
      if (!key.startsWith(start)) return undefined;
      const end = key.indexOf('}', start.length);
      const shard = Number(key.slice(start.length, end));
      return end > start.length && Number.isInteger(shard) && shard < shards ? shard : undefined;
    },
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
    /**
     * Plugin calls of one minute (epoch minute), cluster-wide: a hash of `<plugin>\u0000calls`,
     * `…errors` and `…ms` counters every service calling plugins adds to, for the console.
     */
    pluginCallStats: (minute: number) => `${prefix}:plugin-stats:${minute}`,
    /** Admin sign-in attempts not yet proven good, of one user name from one client address, in the current window. */
    adminLoginAttempts: (username: string, address: string) => `${prefix}:admin:login-attempts:${username}:${address}`,
    /** Admin sign-in (`login`) or setup (`setup`) attempts from one client address, in the current window. */
    adminAddressAttempts: (kind: 'login' | 'setup', address: string) => `${prefix}:admin:${kind}-attempts-from:${address}`,
    /**
     * LangBot's fixed rate-limit window of a chat (`key`: bot, pipeline and chat). It shares the
     * session's tag, so admission counts the window in the same script as it takes the lease; the
     * scripts append the bucket's start, which stays in the tag's slot.
     */
    rateLimitWindow: (s: SessionKey, key: string) => `${pipelineTag(pipelineShard(s))}:ratelimit:${key}`,
    /** One reply's delivery state: attempt, position, waiting parts, seals, the batch being sent. */
    reply,
    /** Per-reply state a platform adapter keeps (Telegram: the message being edited). */
    replyAdapterState: (s: ReplySessionKey, queryId: string) => `${reply(s, queryId)}:a`,
    /** The common start of a session's reply keys (`reply(s, queryId)` is it and the query id), in their slot. */
    replyPrefix: (s: ReplySessionKey) => `${replySession(s)}:r:`,
    /** A session's replies in arrival order, the lease of the replica sending them, its callback numbering. */
    replySessionReplies: (s: ReplySessionKey) => `${replySession(s)}:replies`,
    replySessionSender: (s: ReplySessionKey) => `${replySession(s)}:sender`,
    replySessionSequence: (s: ReplySessionKey) => `${replySession(s)}:seq`,
    /**
     * Set (with the call's TTL) by the ingress replica that holds a call keyed by this reply session (an
     * HTTP-bot `/sync`) as it registers the call, before the message is published: a batch of a session
     * without it goes out without looking for a held call part by part.
     */
    replyHeldCallMark: (s: ReplySessionKey) => `${replySession(s)}:held-call`,
    /** Sessions of the reply session's shard with undelivered parts, scored by their last activity. */
    replyActiveSessions: (s: ReplySessionKey) => `${replyTag(replyShard(s))}:active`,
    /** Every shard's active-sessions set (the takeover sweep reads them all). */
    allReplyActiveSessions: () => Array.from({ length: REPLY_SHARDS }, (_, n) => `${replyTag(n)}:active`),
    /** Whether a query already streamed a chunk (a later notice then goes out on the stream). */
    streamed: (queryId: string) => `${prefix}:streamed:${queryId}`,
    /**
     * The ingress replica holding a webhook call open for its reply: an HTTP-bot `/sync` call (keyed
     * by its session), a WeChat Official Account message waiting for its passive reply (by its MsgId).
     */
    syncWaiter: (botId: string, callKey: string) => `${prefix}:sync:${botId}:${callKey}`,
    /**
     * A platform app's API access token, shared by every replica until shortly before it expires;
     * `app` is a hash of the app's credentials (never the secret itself).
     */
    accessToken: (adapter: string, app: string) => `${prefix}:token:{${adapter}:${app}}`,
    /** Held (SET NX, short TTL) by the one replica fetching that app's access token, so replicas do not all ask at once. */
    accessTokenLock: (adapter: string, app: string) => `${prefix}:token:{${adapter}:${app}}:lock`,
    /** The last `msg_seq` a QQ Official bot used answering message `msgId`: QQ wants a new one for each reply to it. */
    qqMsgSeq: (botId: string, msgId: string) => `${prefix}:qq-seq:{${botId}}:${msgId}`,
    /** A WeCom customer-service account's `sync_msg` cursor: where the next pull goes on, on any replica. */
    wecomKfCursor: (botId: string, openKfId: string) => `${prefix}:wecomcs:{${botId}}:cursor:${openKfId}`,
    /** Held by the one replica pulling a customer-service account's messages, so two pulls never read one cursor. */
    wecomKfPullLock: (botId: string, openKfId: string) => `${prefix}:wecomcs:{${botId}}:pull:${openKfId}`,
    /** Set by a callback that found the pull held: the holder pulls once more before it lets go, so no announced message waits for the next one. */
    wecomKfPullAgain: (botId: string, openKfId: string) => `${prefix}:wecomcs:{${botId}}:again:${openKfId}`,
    /** A WeCom AI bot reply's stream as its refresh callbacks read it (content so far, finished or not), for a while after the message. */
    wecomBotStream: (botId: string, streamId: string) => `${prefix}:wecombot:{${botId}}:stream:${streamId}`,
    /**
     * The lease of the one sandbox call working in a workspace, on any replica (the id is a rendered
     * template that may hold any character, so it is encoded).
     */
    sandboxWorkspaceLease: (workspaceId: string) => `${prefix}:sandbox:ws:${encodeURIComponent(workspaceId)}:lease`,
    /** How many times a query's run was started: its attempt numbers, rising even when delivery counts do not. */
    runAttempts: (queryId: string) => `${prefix}:run-attempts:${queryId}`,
    /**
     * The span of a run's latest traced attempt, to link a restarted run to the one that died. Its
     * hash tag is the attempt counter's whole name, so the one script that touches both finds them in
     * one slot of a Redis Cluster (the counter, named before clusters mattered, has no tag of its own).
     */
    runAttemptSpan: (queryId: string) => `{${prefix}:run-attempts:${queryId}}:span`,
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
