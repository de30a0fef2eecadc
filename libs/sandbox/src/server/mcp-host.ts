import { chown, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  SANDBOX_LIMITS, SANDBOX_MCP_LIMITS, SandboxMcpInput, SandboxMcpOpen,
  type SandboxFailure, type SandboxMcpOpenReply, type SandboxMcpOutput, type Topology,
} from '@conveyor/contracts';
import type { Logger } from '@conveyor/telemetry';
import { safeJson } from '../client.js';
import { sandboxMetrics } from '../metrics.js';
import { killSandbox, type Bubblewrap, type ExecLimits } from './bubblewrap.js';

const tracer = trace.getTracer('@conveyor/sandbox');
const headerGetter = {
  get: (h: MsgHdrs | undefined, k: string) => h?.get(k) || undefined,
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
};

/** Bytes of stdin queued for a process that does not read it; past this it is stopped as broken. */
const STDIN_BACKLOG_BYTES = 4 * 1024 * 1024;
/** Room in a bus message for the envelope around one stdout line. */
const ENVELOPE_BYTES = 64;

export interface McpProcessHostOptions {
  nc: NatsConnection;
  topology: Topology;
  logger: Logger;
  bubblewrap: Bubblewrap;
  /** The rlimits of an MCP process: a server lives for hours, so its CPU bound is not a command's. */
  limits: ExecLimits;
  /** Where each process's scratch folder (its /workspace and HOME) is made, and removed when it ends. */
  root: string;
  /** Processes this replica runs at once; an open past it is answered `busy` (another replica may take the retry). */
  maxProcesses: number;
  owner?: { uid: number; gid: number };
}

type CloseReason = Extract<SandboxMcpOutput, { closed: unknown }>['closed']['reason'];

/**
 * Stdio MCP servers run by the sandbox role instead of by runners: an MCP server is code a user
 * configured, so it runs under bubblewrap like the agent's commands. A runner asks any replica
 * (queue group `sandbox`) to start one; that replica relays JSON-RPC lines between the process's
 * stdin/stdout and two subjects of the process's own, and stops the process when it exits, when its
 * runner closes it or goes quiet, or when the replica stops. The process's files are scratch: a
 * folder of its own, removed with it.
 */
export class McpProcessHost {
  private subscription: Subscription | undefined;
  private readonly processes = new Map<string, McpProcess>();

  constructor(private readonly o: McpProcessHostOptions) {}

  get running(): number {
    return this.processes.size;
  }

  /** Removes what a killed predecessor left in `root`, then takes opens. */
  async start(): Promise<void> {
    await rm(this.o.root, { recursive: true, force: true });
    this.subscription = this.o.nc.subscribe(this.o.topology.subjects.sandboxMcpOpen, {
      queue: 'sandbox',
      callback: (err, msg) => {
        if (!err) void this.open(msg);
      },
    });
  }

  /** Takes no more opens and stops every process, telling each one's runner. */
  async stop(): Promise<void> {
    await this.subscription?.drain().catch(() => undefined);
    await Promise.all([...this.processes.values()].map((p) => p.close('stopping')));
  }

  private async open(msg: Msg): Promise<void> {
    const parent = propagation.extract(ROOT_CONTEXT, msg.headers, headerGetter);
    const span = tracer.startSpan('sandbox mcp open', { kind: SpanKind.SERVER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': msg.subject } }, parent);
    const reply = await context.with(trace.setSpan(parent, span), () => this.startProcess(msg, span));
    if (!reply.ok) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: reply.code });
      span.setAttribute('error.type', reply.code);
      this.o.logger.warn({ code: reply.code, error: reply.error, traceId: span.spanContext().traceId }, 'MCP server not started in the sandbox');
    }
    sandboxMetrics().calls.add(1, { op: 'mcp_open', outcome: reply.ok ? 'ok' : reply.code });
    span.end();
    msg.respond(JSON.stringify(reply));
  }

  private async startProcess(msg: Msg, span: ReturnType<typeof tracer.startSpan>): Promise<SandboxMcpOpenReply> {
    if (msg.data.byteLength > SANDBOX_LIMITS.messageBytes) return refusal('invalid', `the request is over ${SANDBOX_LIMITS.messageBytes} bytes`);
    const parsed = SandboxMcpOpen.safeParse(safeJson(msg));
    if (!parsed.success) return refusal('invalid', `the request is no SandboxMcpOpen: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ').slice(0, 1000)}`);
    const req = parsed.data;
    span.setAttributes({ 'conveyor.mcp.server': req.server, 'conveyor.sandbox.network': req.network });
    if (this.processes.has(req.processId)) return refusal('invalid', `MCP process ${req.processId} is already running`);
    if (this.processes.size >= this.o.maxProcesses) return refusal('busy', `this sandbox replica runs ${this.o.maxProcesses} MCP servers already`);
    const dir = path.join(this.o.root, req.processId);
    try {
      await mkdir(dir, { recursive: true, mode: 0o755 });
      if (this.o.owner) await chown(dir, this.o.owner.uid, this.o.owner.gid);
      const child = this.o.bubblewrap.start({ workspaceDir: dir, skills: new Map(), program: req.command, args: req.args, workdir: '/workspace', env: req.env, network: req.network }, this.o.limits);
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      const process = new McpProcess(req, child, dir, this.o, () => this.processes.delete(req.processId));
      this.processes.set(req.processId, process);
      this.o.logger.info({ mcpServer: req.server, processId: req.processId, network: req.network, traceId: span.spanContext().traceId }, 'MCP server started in the sandbox');
      return { v: 1, ok: true };
    } catch (err) {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      return refusal('internal', `the MCP server could not be started: ${(err as Error).message}`);
    }
  }
}

/** One running MCP server: its stdin fed from its input subject, its stdout published line by line. */
class McpProcess {
  private readonly input: Subscription;
  private readonly idleTimer: NodeJS.Timeout;
  private lastSeen = Date.now();
  private reason: CloseReason | undefined;
  private stdoutLine: Buffer[] = [];
  private stdoutLineBytes = 0;
  private stderrTail = '';
  private readonly exited: Promise<void>;

  constructor(
    private readonly req: SandboxMcpOpen,
    private readonly child: ReturnType<Bubblewrap['start']>,
    private readonly dir: string,
    private readonly o: McpProcessHostOptions,
    forget: () => void,
  ) {
    const { subjects } = o.topology;
    const output = subjects.sandboxMcpOutput(req.processId);
    sandboxMetrics().mcpProcesses.add(1);
    this.input = o.nc.subscribe(subjects.sandboxMcpInput(req.processId), { callback: (err, msg) => (err ? undefined : this.onInput(msg)) });
    child.stdin.on('error', () => undefined);
    child.stdout.on('data', (chunk: Buffer) => this.onStdout(chunk, output));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-SANDBOX_MCP_LIMITS.stderrTailChars);
    });
    // The runner sends at least a keepalive every `keepaliveMs`; several missed in a row mean it is gone.
    const idleMs = req.keepaliveMs * SANDBOX_MCP_LIMITS.idleKeepalives;
    this.idleTimer = setInterval(() => {
      if (Date.now() - this.lastSeen > idleMs) void this.close('idle');
    }, req.keepaliveMs);
    this.idleTimer.unref();
    this.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        clearInterval(this.idleTimer);
        this.input.unsubscribe();
        forget();
        const reason = this.reason ?? 'exited';
        sandboxMetrics().mcpProcesses.add(-1);
        sandboxMetrics().mcpExits.add(1, { reason });
        const closed: SandboxMcpOutput = { v: 1, closed: { reason, exitCode: code, signal, stderrTail: this.stderrTail } };
        o.nc.publish(output, JSON.stringify(closed));
        o.logger.info({ mcpServer: req.server, processId: req.processId, reason, exitCode: code, signal }, 'MCP server in the sandbox ended');
        void rm(dir, { recursive: true, force: true }).catch(() => undefined).then(() => resolve());
      });
    });
  }

  /** Stops the process (the whole sandbox) and waits until it is gone and its folder removed. */
  close(reason: CloseReason): Promise<void> {
    this.reason ??= reason;
    killSandbox(this.child.pid);
    return this.exited;
  }

  private onInput(msg: Msg): void {
    this.lastSeen = Date.now();
    const parsed = SandboxMcpInput.safeParse(safeJson(msg));
    if (!parsed.success) {
      msg.respond(JSON.stringify({ v: 1, ok: false, error: 'not a SandboxMcpInput' }));
      return;
    }
    if (parsed.data.close) {
      msg.respond(JSON.stringify({ v: 1, ok: true }));
      void this.close('closed');
      return;
    }
    if (parsed.data.message !== undefined) {
      if (this.child.stdin.writableLength > STDIN_BACKLOG_BYTES) {
        msg.respond(JSON.stringify({ v: 1, ok: false, error: 'the MCP server does not read its input' }));
        void this.close('protocol');
        return;
      }
      this.child.stdin.write(`${JSON.stringify(parsed.data.message)}\n`);
    }
    msg.respond(JSON.stringify({ v: 1, ok: true }));
  }

  /** Splits stdout into lines; each is one JSON-RPC message, relayed as it is. A line past the bus bound ends the process. */
  private onStdout(chunk: Buffer, output: string): void {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      this.stdoutLine.push(chunk.subarray(start, nl));
      const line = Buffer.concat(this.stdoutLine).toString('utf8').trim();
      this.stdoutLine = [];
      this.stdoutLineBytes = 0;
      start = nl + 1;
      if (line) this.relay(line, output);
    }
    const rest = chunk.subarray(start);
    this.stdoutLine.push(rest);
    this.stdoutLineBytes += rest.byteLength;
    if (this.stdoutLineBytes > SANDBOX_LIMITS.messageBytes - ENVELOPE_BYTES) {
      this.stderrTail = `${this.stderrTail}\n[conveyor] a stdout line went past ${SANDBOX_LIMITS.messageBytes - ENVELOPE_BYTES} bytes`.slice(-SANDBOX_MCP_LIMITS.stderrTailChars);
      void this.close('protocol');
    }
  }

  private relay(line: string, output: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      // A server that logs to stdout by mistake: the line is kept for the exit report, not relayed.
      this.stderrTail = `${this.stderrTail}\n${line}`.slice(-SANDBOX_MCP_LIMITS.stderrTailChars);
      return;
    }
    this.o.nc.publish(output, JSON.stringify({ v: 1, message } satisfies SandboxMcpOutput));
  }
}

function refusal(code: SandboxFailure, error: string): SandboxMcpOpenReply {
  return { v: 1, ok: false, code, error: error.slice(0, 4096) };
}

