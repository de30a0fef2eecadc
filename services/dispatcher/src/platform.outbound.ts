import { Injectable } from '@nestjs/common';
import type { ReplyRoute } from '@conveyor/contracts';
import type { EventDelivery, Outbound, OutboundReply, ReplyRef, SendResult } from '@conveyor/delivery';
import { DelivererProvider } from './outbound/deliverer.provider.js';

export type { OutboundReply, SendResult } from '@conveyor/delivery';

/**
 * The dispatcher's outbound port : `send(route, reply)` for every
 * platform, routed by `route.adapter` to the registered platform's adapter (libs/platforms/registry).
 *
 * Call `send` inside `withReplyRef(event, …)` — one call per runner event handled — so parts are
 * ordered, coalesced and de-duplicated across dispatcher replicas in Redis and the handler does not
 * wait for the platform. A `send` outside any event scope goes straight to the platform.
 */
@Injectable()
export class PlatformOutbound implements Outbound {
  constructor(private readonly provider: DelivererProvider) {}

  send(route: ReplyRoute, reply: OutboundReply, ref?: ReplyRef): Promise<SendResult> {
    return this.provider.deliverer.send(route, reply, ref);
  }

  /** False when a newer attempt of the run, or the end of the reply, makes this attempt's events stale. */
  admits(route: ReplyRoute, queryId: string, attempt: number, event?: EventDelivery): Promise<boolean> {
    return this.provider.deliverer.admits(route, queryId, attempt, event);
  }

  /** Resolves when the event's parts went out (see Deliverer.delivered): acknowledge the event only then. */
  delivered(ref: ReplyRef): Promise<void> {
    return this.provider.deliverer.delivered(ref);
  }

  withReplyRef<T>(ref: ReplyRef, fn: () => Promise<T>): Promise<T> {
    return this.provider.deliverer.withReplyRef(ref, fn);
  }
}
