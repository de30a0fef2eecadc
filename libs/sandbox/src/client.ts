import { setTimeout as sleep } from 'node:timers/promises';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { headers as natsHeaders, NoRespondersError, RequestError, TimeoutError, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { REPEATABLE_SANDBOX_OPS, SANDBOX_LIMITS, SandboxReply, SandboxRequest, type SandboxRequestInput, type Topology } from '@conveyor/contracts';
import { sandboxMetrics } from './metrics.js';

const tracer = trace.getTracer('@conveyor/sandbox');
const headerSetter = { set: (h: MsgHdrs, k: string, v: string) => h.set(k, v) };

/** The sandbox could not be asked, or gave no usable answer; `code` says which. */
export class SandboxUnreachableError extends Error {
  constructor(readonly code: 'no_responders' | 'timeout' | 'malformed' | 'too_large', message: string) {
    super(message);
    this.name = 'SandboxUnreachableError';
  }
}

export interface SandboxClientOptions {
  nc: NatsConnection;
  topology: Topology;
  /**
   * What a call may spend besides its own command: waiting for a slot on a replica and for the
   * workspace's lease, unpacking and storing the workspace. The sandbox's SANDBOX_LEASE_WAIT_MS and
   * a margin belong in it.
   */
  overheadMs?: number;
  /** How often a `busy` answer (nothing was run) is asked again, on any replica. */
  busyRetries?: number;
}

/**
 * The runner's side of the sandbox role: one request per operation over core NATS, with the trace
 * context in its headers, bounded in time by the operation's own time limit plus the overhead. A
 * call that could not have changed anything (read, glob, grep, or a `busy` answer) is asked again
 * once, on whichever replica takes it; a command whose replica died mid-call is not run again (it may
 * have written files or called out), and the model is told so.
 */
export class SandboxClient {
  private readonly overheadMs: number;
  private readonly busyRetries: number;

  constructor(private readonly o: SandboxClientOptions) {
    this.overheadMs = o.overheadMs ?? 30_000;
    this.busyRetries = o.busyRetries ?? 2;
  }

  async call(input: SandboxRequestInput, signal?: AbortSignal): Promise<SandboxReply> {
    const request = SandboxRequest.parse(input);
    const body = JSON.stringify(request);
    if (Buffer.byteLength(body) > SANDBOX_LIMITS.messageBytes) throw new SandboxUnreachableError('too_large', `the ${request.call.op} request is over ${SANDBOX_LIMITS.messageBytes} bytes`);
    const own = request.call.op === 'exec' ? request.call.timeoutSec * 1000 : 0;
    const timeout = own + this.overheadMs;
    const op = request.call.op;
    return tracer.startActiveSpan(`sandbox ${op}`, { kind: SpanKind.CLIENT, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': this.o.topology.subjects.sandboxCall, 'conveyor.sandbox.op': op } }, async (span) => {
      try {
        for (let attempt = 1; ; attempt++) {
          signal?.throwIfAborted();
          const h = natsHeaders();
          propagation.inject(context.active(), h, headerSetter);
          let reply: SandboxReply;
          try {
            const msg = await this.o.nc.request(this.o.topology.subjects.sandboxCall, body, { timeout, headers: h });
            const parsed = SandboxReply.safeParse(safeJson(msg));
            if (!parsed.success) throw new SandboxUnreachableError('malformed', 'the sandbox answered something that is no SandboxReply');
            reply = parsed.data;
          } catch (err) {
            const failure = classifyRequestError(err, timeout);
            sandboxMetrics().clientCalls.add(1, { op, result: failure.code });
            const again = failure.code !== 'malformed' && REPEATABLE_SANDBOX_OPS.has(op) && attempt === 1;
            if (!again) throw failure;
            span.addEvent('sandbox call asked again', { reason: failure.code });
            continue;
          }
          sandboxMetrics().clientCalls.add(1, { op, result: reply.ok ? 'ok' : reply.code });
          if (!reply.ok && reply.code === 'busy' && attempt <= this.busyRetries) {
            span.addEvent('sandbox busy; asked again', { attempt });
            await sleep(200 * attempt, undefined, { signal });
            continue;
          }
          if (!reply.ok) span.setAttribute('error.type', reply.code);
          return reply;
        }
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        span.end();
      }
    });
  }
}

/**
 * A failed NATS request to the sandbox role, by cause. `action` names what the request was for when
 * it is not a workspace call (the advice for a missing role differs).
 */
export function classifyRequestError(err: unknown, timeoutMs: number, action?: string): SandboxUnreachableError {
  if (err instanceof SandboxUnreachableError) return err;
  if (err instanceof NoRespondersError || (err instanceof RequestError && (err.isNoResponders() || err.cause instanceof NoRespondersError))) {
    return new SandboxUnreachableError('no_responders', action
      ? `could not ${action}: no sandbox replica answers (start the sandbox role, or run stdio MCP servers in the runner with MCP_STDIO_IN=runner)`
      : 'no sandbox replica is running: start the sandbox role, or turn off box-enabled in the pipeline');
  }
  if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
    return new SandboxUnreachableError('timeout', action
      ? `could not ${action}: the sandbox did not answer within ${Math.round(timeoutMs / 1000)} s`
      : `the sandbox did not answer within ${Math.round(timeoutMs / 1000)} s (its replica may have stopped mid-call); the call may or may not have taken effect, and the workspace keeps its last saved state`);
  }
  return new SandboxUnreachableError('malformed', `the sandbox call failed: ${(err as Error).message}`);
}

export function safeJson(msg: { json(): unknown }): unknown {
  try {
    return msg.json();
  } catch {
    return undefined;
  }
}
