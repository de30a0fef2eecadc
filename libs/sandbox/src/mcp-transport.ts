import { randomUUID } from 'node:crypto';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { headers as natsHeaders, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  SANDBOX_LIMITS, SANDBOX_MCP_LIMITS, SandboxMcpOpenReply, SandboxMcpOutput,
  type SandboxMcpInput, type SandboxMcpOpenInput, type Topology,
} from '@conveyor/contracts';
import { classifyRequestError, safeJson, SandboxUnreachableError } from './client.js';

const tracer = trace.getTracer('@conveyor/sandbox');
const headerSetter = { set: (h: MsgHdrs, k: string, v: string) => h.set(k, v) };

export interface SandboxMcpTransportOptions {
  nc: NatsConnection;
  topology: Topology;
  /** The server to start: its name, command, arguments, declared environment and network choice. */
  server: Omit<SandboxMcpOpenInput, 'v' | 'processId'>;
  /** How long the sandbox may take to start the process (not its MCP handshake, which the client bounds). */
  openTimeoutMs?: number;
  /** How long one message to the process may take to be written. */
  sendTimeoutMs?: number;
  /** How often the process is told this runner still holds it (the sandbox stops it after several missed). */
  keepaliveMs?: number;
}

/**
 * An MCP client transport to a stdio server the sandbox role runs: the MCP SDK's `Client` speaks
 * JSON-RPC through it as through its own stdio transport. `start` asks any sandbox replica to start
 * the process (its output subject is subscribed first, so no line is missed); each message to the
 * server is a request answered once written; a keepalive tells the replica the runner still holds
 * it. The transport closes (and the MCP session reconnects on next use, on any replica) when the
 * process exits or its replica stops answering.
 */
export class SandboxMcpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly processId = randomUUID();
  private output: Subscription | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  private finished = false;

  private readonly keepaliveMs: number;

  constructor(private readonly o: SandboxMcpTransportOptions) {
    this.keepaliveMs = o.keepaliveMs ?? SANDBOX_MCP_LIMITS.keepaliveMs;
  }

  async start(): Promise<void> {
    const { subjects } = this.o.topology;
    this.output = this.o.nc.subscribe(subjects.sandboxMcpOutput(this.processId), { callback: (err, msg) => (err ? this.fail(err) : this.onOutput(safeJson(msg))) });
    const timeout = this.o.openTimeoutMs ?? 30_000;
    await tracer.startActiveSpan('sandbox mcp open', { kind: SpanKind.CLIENT, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subjects.sandboxMcpOpen, 'conveyor.mcp.server': this.o.server.server } }, async (span) => {
      try {
        const h = natsHeaders();
        propagation.inject(context.active(), h, headerSetter);
        const body = JSON.stringify({ v: 1, processId: this.processId, ...this.o.server, keepaliveMs: this.keepaliveMs } satisfies SandboxMcpOpenInput);
        if (Buffer.byteLength(body) > SANDBOX_LIMITS.messageBytes) throw new SandboxUnreachableError('too_large', `the MCP server's start request is over ${SANDBOX_LIMITS.messageBytes} bytes`);
        const msg = await this.o.nc.request(subjects.sandboxMcpOpen, body, { timeout, headers: h }).catch((err: unknown) => {
          throw classifyRequestError(err, timeout, 'start the MCP server');
        });
        const reply = SandboxMcpOpenReply.safeParse(safeJson(msg));
        if (!reply.success) throw new SandboxUnreachableError('malformed', 'the sandbox answered something that is no SandboxMcpOpenReply');
        if (!reply.data.ok) throw new Error(`the sandbox did not start MCP server ${this.o.server.server} (${reply.data.code}): ${reply.data.error}`);
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        this.finish();
        throw err;
      } finally {
        span.end();
      }
    });
    this.keepalive = setInterval(() => {
      this.post({ v: 1 }).catch((err: unknown) => this.fail(err));
    }, this.keepaliveMs);
    this.keepalive.unref();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    try {
      await this.post({ v: 1, message });
    } catch (err) {
      this.fail(err);
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.finished) return;
    // Best effort: a replica that does not hear it stops the process after the idle time anyway.
    this.o.nc.publish(this.o.topology.subjects.sandboxMcpInput(this.processId), JSON.stringify({ v: 1, close: true } satisfies SandboxMcpInput));
    this.finish();
  }

  private async post(input: SandboxMcpInput): Promise<void> {
    if (this.finished) throw new SandboxUnreachableError('no_responders', 'the MCP server in the sandbox has ended');
    const timeout = this.o.sendTimeoutMs ?? 10_000;
    const body = JSON.stringify(input);
    if (Buffer.byteLength(body) > SANDBOX_LIMITS.messageBytes) throw new SandboxUnreachableError('too_large', `a message to the MCP server is over ${SANDBOX_LIMITS.messageBytes} bytes`);
    const msg = await this.o.nc.request(this.o.topology.subjects.sandboxMcpInput(this.processId), body, { timeout }).catch((err: unknown) => {
      throw classifyRequestError(err, timeout, 'reach the MCP server');
    });
    const answer = safeJson(msg) as { ok?: unknown; error?: unknown } | undefined;
    if (answer?.ok !== true) throw new SandboxUnreachableError('malformed', `the MCP server in the sandbox refused a message: ${String(answer?.error ?? 'no answer')}`);
  }

  private onOutput(json: unknown): void {
    const out = SandboxMcpOutput.safeParse(json);
    if (!out.success) return this.onerror?.(new Error('the sandbox relayed something that is no SandboxMcpOutput'));
    if ('closed' in out.data) {
      const { reason, exitCode, signal, stderrTail } = out.data.closed;
      if (reason !== 'closed') this.onerror?.(new Error(`the MCP server in the sandbox ended (${reason}, exit ${exitCode ?? signal}): ${stderrTail.trim().slice(-500)}`));
      return this.finish();
    }
    const message = JSONRPCMessageSchema.safeParse(out.data.message);
    if (!message.success) return this.onerror?.(new Error('the MCP server wrote a line that is no JSON-RPC message'));
    this.onmessage?.(message.data);
  }

  private fail(err: unknown): void {
    if (this.finished) return;
    this.onerror?.(err instanceof Error ? err : new Error(String(err)));
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.keepalive);
    this.output?.unsubscribe();
    this.onclose?.();
  }
}
