import { CustomTransportStrategy, Server, type MessageHandler } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import type { z } from 'zod';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { ConsumerSpec, StreamSpec } from '@conveyor/contracts';
import {
  ensureConsumers,
  ensureStreams,
  errorFields,
  silentLogger,
  startConsumer,
  type Backoff,
  type BusLogger,
  type BusPublisher,
  type ConsumerHandle,
  type MessageContext,
  type StopOptions,
} from '@conveyor/bus';
import { JetStreamContext } from './jetstream.context.js';

/** How one `@EventPattern(<durable>)` handler is fed. */
export interface JetStreamBinding<S extends z.ZodType = z.ZodType> {
  spec: ConsumerSpec;
  schema: S;
  /** Handlers running at once in this process. Default 1. */
  concurrency?: number;
  /** The name in dead letters (e.g. the role, `orchestrator`). Default the durable name. */
  source?: string;
  prefetch?: number;
  backoff?: Backoff;
}

export interface JetStreamServerOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Publishes the dead letters. */
  publisher: BusPublisher;
  /** Dead-letter subject for a source, e.g. `topology.subjects.deadLetter`. */
  deadLetterSubject: (source: string) => string;
  /** Keyed by durable consumer name, which is also the handler's `@EventPattern`. */
  bindings: Record<string, JetStreamBinding>;
  /** Streams to ensure before the consumers (they must exist for the consumers). Default none. */
  streams?: readonly StreamSpec[];
  logger?: BusLogger;
  stop?: StopOptions;
}

/**
 * A NestJS transport for durable JetStream work: on `listen` it provisions the streams and durable
 * consumers, then runs one @conveyor/bus consumer per binding, dispatching validated payloads to the
 * `@EventPattern(<durable>)` handler with a JetStreamContext. A handler that returns acks its message;
 * a throw naks or dead-letters as @conveyor/bus decides (see JetStreamExceptionFilter for keeping the
 * error class). `close` stops pulling and waits for running handlers.
 *
 *   app.connectMicroservice({ strategy: new JetStreamServer({ ... }) });
 *   @EventPattern<string>(topology.consumers.runner.durable) run(@Payload() req: RunRequest, @Ctx() ctx: JetStreamContext)
 */
export class JetStreamServer extends Server implements CustomTransportStrategy {
  readonly #opts: JetStreamServerOptions;
  readonly #log: BusLogger;
  #handles: ConsumerHandle[] = [];

  constructor(opts: JetStreamServerOptions) {
    super();
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
  }

  listen(callback: (err?: unknown, ...info: unknown[]) => void): void {
    this.start().then(
      () => callback(),
      (err) => {
        this.#log.error(errorFields(err), 'JetStream transport failed to start');
        void this.stopAll().finally(() => callback(err));
      },
    );
  }

  private async start(): Promise<void> {
    const { js, jsm, publisher, bindings, streams } = this.#opts;
    const entries = Object.entries(bindings);
    for (const [pattern, b] of entries) {
      if (b.spec.durable !== pattern) throw new Error(`binding "${pattern}" must be keyed by its durable name (${b.spec.durable})`);
      if (!this.getHandlerByPattern(pattern)) throw new Error(`no @EventPattern("${pattern}") handler is registered for the JetStream binding`);
    }
    for (const pattern of this.getHandlers().keys()) {
      if (!(pattern in bindings)) this.#log.warn({ pattern }, 'handler has no JetStream binding; it will not receive messages');
    }
    if (streams?.length) await ensureStreams(jsm, streams, this.#log);
    await ensureConsumers(jsm, entries.map(([, b]) => b.spec), this.#log);
    for (const [pattern, b] of entries) {
      const handler = this.getHandlerByPattern(pattern)!;
      const source = b.source ?? pattern;
      this.#handles.push(
        await startConsumer({
          js,
          spec: b.spec,
          schema: b.schema,
          source,
          deadLetterSubject: this.#opts.deadLetterSubject(source),
          publisherForDeadLetters: publisher,
          concurrency: b.concurrency ?? 1,
          logger: this.#log,
          ...(b.prefetch ? { prefetch: b.prefetch } : {}),
          ...(b.backoff ? { backoff: b.backoff } : {}),
          handler: (payload, ctx) => this.dispatch(handler, payload, ctx),
        }),
      );
    }
    this._status$.next('connected');
  }

  /** Runs the Nest handler chain for one message; resolves when done, rejects with the handler's error. */
  private dispatch(head: MessageHandler, payload: unknown, ctx: MessageContext): Promise<void> {
    const nestCtx = new JetStreamContext([ctx]);
    return new Promise<void>((resolve, reject) => {
      void this.runWithProcessingHooks(nestCtx, async (runEndHook) => {
        try {
          for (let h: MessageHandler | undefined = head; h; h = h.next) {
            const result = await h(payload, nestCtx);
            await lastValueFrom(this.transformToObservable(result), { defaultValue: undefined });
          }
          resolve();
        } catch (err) {
          reject(asError(err));
        } finally {
          runEndHook();
        }
      });
    });
  }

  async close(): Promise<void> {
    await this.stopAll();
    this._status$.next('disconnected');
  }

  private async stopAll(): Promise<void> {
    const handles = this.#handles;
    this.#handles = [];
    await Promise.all(handles.map((h) => h.stop(this.#opts.stop)));
  }

  on(): never {
    throw new Error('JetStreamServer has no events; watch the NATS connection status instead');
  }

  unwrap<T>(): T {
    return this.#opts.js as T;
  }
}

/** Nest's default filter rethrows `{ status, message }` objects; keep Error instances, wrap the rest. */
function asError(err: unknown): unknown {
  if (err instanceof Error) return err;
  if (err && typeof err === 'object' && 'message' in err) return new Error(String((err as { message: unknown }).message));
  return new Error(String(err));
}
