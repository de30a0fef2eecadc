// The JetStream consume loop as a @nestjs/microservices transport: a service declares
// `@EventPattern(role)` handlers taking `@Payload()` and `@Ctx()` (the ConsumeContext), and this
// strategy runs one durable role consumer per handler with the loop's guarantees unchanged (schema
// validation and dead letters, ack / nak with delay / term by the error's class, heartbeats, bounded
// concurrency and prefetch, trace context, drain on close).
import { applyDecorators, Catch, UseFilters, type RpcExceptionFilter } from '@nestjs/common';
import { EventPattern, Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { isObservable, lastValueFrom, throwError, type Observable } from 'rxjs';
import type { z } from 'zod';
import type { ConsumeContext } from '@conveyor/bus';
import { startRoleConsumer, type Role, type RoleConsumerInfra, type RoleConsumerOptions } from './role-consumer.js';

/** How one role's consumer runs; its handler is the service's `@EventPattern(role)` method. */
export type RoleConsumerSettings = Omit<RoleConsumerOptions<z.ZodType>, 'role' | 'handler'>;

export type RoleConsumers = Partial<Record<Role, RoleConsumerSettings>>;

/**
 * `@EventPattern(role)` for this transport, with the role's name checked: the method handles the
 * role consumer's messages, taking `@Payload()` (validated by the role's schema) and `@Ctx()` (the
 * ConsumeContext: delivery count, abort signal, span). Its errors reach the consume loop as thrown.
 */
export function RoleHandler(role: Role): MethodDecorator {
  return applyDecorators(EventPattern<Role>(role), UseFilters(new HandlerErrorsPassThrough()));
}

export class JetStreamTransport extends Server implements CustomTransportStrategy {
  /** The consume loop, not Nest, decides what a handler's failure means: the error reaches it whole. */
  override readonly propagatesEventHandlerErrors = true;
  private readonly stops: Array<() => Promise<void>> = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly infra: RoleConsumerInfra, private readonly consumers: RoleConsumers) {
    super();
  }

  async listen(callback: (err?: unknown) => void): Promise<void> {
    try {
      for (const role of Object.keys(this.consumers)) {
        if (!this.messageHandlers.has(role)) throw new Error(`the ${role} consumer has no @EventPattern('${role}') handler`);
      }
      for (const [pattern, handler] of this.messageHandlers) {
        const role = this.roleOf(pattern);
        const settings = role && this.consumers[role];
        if (!role || !settings) throw new Error(`@EventPattern('${pattern}') names no consumer this service runs (${Object.keys(this.consumers).join(', ') || 'none'})`);
        this.stops.push(await startRoleConsumer(this.infra, { ...settings, role, handler: (payload, ctx) => invoke(handler, payload, ctx) }));
      }
      callback();
    } catch (err) {
      callback(err);
    }
  }

  /** Drains every consumer (running handlers finish within the shutdown grace); safe to call twice. */
  close(): Promise<void> {
    this.closing ??= Promise.all(this.stops.map((stop) => stop())).then(() => undefined);
    return this.closing;
  }

  on(): never {
    throw new Error('the JetStream transport emits no events; its consumers report through logs and metrics');
  }

  unwrap<T>(): T {
    throw new Error('the JetStream transport has no client of its own to unwrap; use Infra.js');
  }

  private roleOf(pattern: string): Role | undefined {
    return Object.keys(this.infra.topology.consumers).find((role): role is Role => role === pattern);
  }
}

/** Runs Nest's wrapped handler (pipes, guards, interceptors, filters) and waits for what it returns. */
async function invoke(handler: MessageHandler, payload: unknown, ctx: ConsumeContext): Promise<void> {
  const result: unknown = await handler(payload, ctx);
  if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
}

/**
 * Hands a handler's error on as it was thrown. Nest's default RPC filter would turn every error that
 * is no RpcException into "Internal server error", and the consume loop needs the error's class
 * (RetryableError with its delay, PermanentError) to choose between nak and dead letter.
 */
@Catch()
class HandlerErrorsPassThrough implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}
