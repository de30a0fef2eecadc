import type { z } from 'zod';
import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import type { RedisClient } from '@conveyor/redis-scripts';
import type { InboundQuery } from './inbound.js';

export interface ConnectionLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * A little JSON a held connection keeps for whichever replica holds its bot next (Discord: the
 * session to resume), in the platform's own shape. Writes are fenced: only the replica holding the
 * bot's lease stores anything, so a former holder that was paused past its lease cannot overwrite
 * what its successor wrote. It lives as long as the lease and a grace after it (a successor of a
 * holder that died finds it), then expires.
 */
export interface ConnectionState<S> {
  /** What a holder stored last; undefined when nothing is stored or the stored value is not what the schema accepts. */
  get(): Promise<S | undefined>;
  /**
   * Replaces it. Rejects when this replica no longer holds the bot (a LeaseLostError, code
   * `CONNECTION_LEASE_LOST`) and when the JSON is over the size bound (code `CONNECTION_STATE_TOO_LARGE`).
   */
  put(value: S): Promise<void>;
  /** Removes it; fenced like `put`. */
  clear(): Promise<void>;
}

/** The zod schema a platform gives its connection state: the store parses what it reads with it. */
export type ConnectionStateSchema<S> = z.ZodType<S>;

/** What the gateway hands a platform's connection when it opens one for a bot it owns. */
export interface ConnectionDeps<C> {
  botId: string;
  config: C;
  logger: ConnectionLogger;
  /**
   * The fencing check: resolves while this replica still owns the bot, rejects (a LeaseLostError,
   * code `CONNECTION_LEASE_LOST`) once it does not. The gateway runs it before it publishes an
   * inbound message or sends an outbound one; a connection may call it before other side effects.
   */
  fence(): Promise<number>;
  /** Publishes an inbound message as a query (fenced, de-duplicated by `dedupId`). */
  publish(query: InboundQuery): Promise<void>;
  /** An event that can never become a query or be understood (logged and counted by the gateway). */
  malformed(reason: string, detail?: object): void;
  /** The bot's connection state, read and written in the shape the platform's schema gives it. */
  state<S>(schema: ConnectionStateSchema<S>): ConnectionState<S>;
  /**
   * The deployment's Redis and key prefix, for what a platform shares with the other roles' replicas
   * (an app's access token, also used by the dispatcher). The gateway always gives it; a unit test
   * may not, and a platform then does without the sharing.
   */
  shared?: { redis: RedisClient; prefix: string };
}

/** The platform refused a reply part; retrying it does not help. Recognised by `code`. */
export class PlatformRejectedError extends Error {
  readonly code = 'PLATFORM_REJECTED';

  constructor(message: string) {
    super(message);
    this.name = 'PlatformRejectedError';
  }
}

/** Which streamed reply a snapshot belongs to (one id for all its snapshots) and whether it is the last. */
export interface StreamSnapshot {
  id: string;
  final: boolean;
}

/** An open connection of one bot. */
export interface OpenConnection {
  /** Resolves with the reason once the connection ended by itself. */
  readonly ended: Promise<string>;
  /**
   * Sends one whole reply to the chat the route names; resolves with the platform's message id.
   * `onWritten` is called once the request left for the platform (written to the socket), before its
   * answer: from then on the part may have been shown, so it must not be sent a second time.
   * `stream` is set for the snapshots of a reply streamed in place, where the platform's relay asked
   * for them (`GatewayRelayAdapterOptions.streamSnapshots`): the message is the reply so far.
   */
  send(route: ReplyRoute, message: MessageChain, onWritten?: () => void, stream?: StreamSnapshot): Promise<{ messageId?: string }>;
  close(reason: string): Promise<void>;
}

/**
 * A platform reached over a connection Conveyor holds (a WebSocket to OneBot) instead of a webhook.
 * The gateway service opens it for the bots it owns, exactly one replica per bot.
 */
export interface PlatformConnection<C> {
  /**
   * Whether a bot with these settings is reached over the held connection. A platform that offers
   * both a webhook and a connection (Slack Socket Mode, Lark long connection, DingTalk Stream mode)
   * decides per bot from its settings; absent means every bot of the platform is.
   */
  holds?(config: C): boolean;
  open(deps: ConnectionDeps<C>): Promise<OpenConnection>;
}

