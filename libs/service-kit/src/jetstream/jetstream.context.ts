import { BaseRpcContext } from '@nestjs/microservices';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { Span } from '@opentelemetry/api';
import type { MessageContext } from '@conveyor/bus';

/** The NestJS context of a JetStream message (`@Ctx() ctx: JetStreamContext`). */
export class JetStreamContext extends BaseRpcContext<[MessageContext]> {
  /** Everything @conveyor/bus hands a handler. */
  getMessage(): MessageContext {
    return this.args[0];
  }
  getSubject(): string {
    return this.args[0].subject;
  }
  getDeliveryCount(): number {
    return this.args[0].deliveryCount;
  }
  getHeaders(): MsgHdrs | undefined {
    return this.args[0].headers;
  }
  getQueryId(): string | undefined {
    return this.args[0].queryId;
  }
  getSignal(): AbortSignal {
    return this.args[0].signal;
  }
  getSpan(): Span {
    return this.args[0].span;
  }
  /** Resets the ack timer (sent automatically every ackWait/3 anyway). */
  working(): void {
    this.args[0].working();
  }
}
