import type { MessageChain, ReplyRoute } from '@conveyor/contracts';
import type { InboundQuery } from './inbound.js';

export interface ConnectionLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

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
}

/** The platform refused a reply part; retrying it does not help. Recognised by `code`. */
export class PlatformRejectedError extends Error {
  readonly code = 'PLATFORM_REJECTED';

  constructor(message: string) {
    super(message);
    this.name = 'PlatformRejectedError';
  }
}

/** An open connection of one bot. */
export interface OpenConnection {
  /** Resolves with the reason once the connection ended by itself. */
  readonly ended: Promise<string>;
  /**
   * Sends one whole reply to the chat the route names; resolves with the platform's message id.
   * `onWritten` is called once the request left for the platform (written to the socket), before its
   * answer: from then on the part may have been shown, so it must not be sent a second time.
   */
  send(route: ReplyRoute, message: MessageChain, onWritten?: () => void): Promise<{ messageId?: string }>;
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

