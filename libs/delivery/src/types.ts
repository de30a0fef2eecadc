import type { MessageChain, ReplyRoute } from '@conveyor/contracts';

/** One reply part as the pipeline's send stage hands it over (LangBot reply_message / reply_message_chunk). */
export interface OutboundReply {
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
}

export type SendResult = { delivered: true; queued?: boolean } | { delivered: false; reason: string };

/** The send port the pipeline's SendResponseBack stage calls. */
export interface Outbound {
  send(route: ReplyRoute, reply: OutboundReply): Promise<SendResult>;
}

/**
 * Which runner event a send belongs to. Events of one query carry `attempt` and a contiguous `seq`
 * from 0; every event is sealed once it was handled (with the parts it produced, maybe none), so a
 * replica can tell "not yet arrived" from "produced nothing" and keep the reply in order.
 */
export interface ReplyRef {
  queryId: string;
  attempt: number;
  seq: number;
  route: ReplyRoute;
  /** The run ended with this event (`done`, `error`): an open stream gets its final part. */
  terminal?: boolean;
}

/** A part as it waits in Redis. */
export interface QueuedPart {
  route: ReplyRoute;
  reply: OutboundReply;
  queryId: string;
  /** `${attempt}:${seq}:${sub}`: the part's identity, stable across redeliveries. */
  key: string;
  /** Trace context of the event that produced it (W3C carrier). */
  trace?: Record<string, string>;
}

export type BatchEntry =
  | { t: 'part'; part: QueuedPart }
  | { t: 'seal'; queryId: string; terminal: boolean; route: ReplyRoute; attempt?: number; seq?: number };

/** Per-reply state an adapter may keep (Telegram: the placeholder's message id), stored with the reply in Redis. */
export interface ReplyState {
  get(name: string): Promise<string | null>;
  set(name: string, value: string): Promise<void>;
}

export interface DeliveryContext {
  queryId: string;
  /** The part's identity (`attempt:seq:sub`), stable when a part is sent again after a crash. */
  partKey: string;
  /** 1-based count of streamed snapshots of this reply so far, coalesced ones included (LangBot's msg_sequence). */
  chunkOrdinal: number;
  /**
   * The session's callback number of this part (LangBot's HTTP-bot §8.4: 1 after a final callback, else
   * one more), assigned when the part is taken for sending, so numbers rise in the order parts go out.
   */
  sequence: number;
  /** When the part was first taken for sending; the same when a crash makes it go out again. */
  timestamp: Date;
  state: ReplyState;
  signal?: AbortSignal;
}

/** One platform's outbound side. */
export interface PlatformAdapter {
  readonly name: ReplyRoute['adapter'];
  deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult>;
}
