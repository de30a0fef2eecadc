import type { ReplyRoute } from '@conveyor/contracts';
import type { OutboundReply, SendResult } from '@conveyor/platform-kit';

// The adapter-facing types live in platform-kit, which every platform package builds on; they are
// re-exported so the delivery layer's users need one import.
export type { DeliveryContext, OutboundReply, PlatformAdapter, ReplyState, SendResult } from '@conveyor/platform-kit';

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

/** Where an event stands in its query and on the bus, for `Deliverer.admits`. */
export interface EventDelivery {
  seq: number;
  /** The bus delivers the event for the first time. */
  firstDelivery: boolean;
}
