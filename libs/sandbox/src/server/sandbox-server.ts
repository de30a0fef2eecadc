import path from 'node:path';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import { SANDBOX_LIMITS, SandboxRequest, type SandboxFailure, type SandboxLimit, type SandboxOp, type SandboxReply, type Topology } from '@conveyor/contracts';
import type { Logger } from '@conveyor/telemetry';
import { ArchiveError } from '../skills/archive.js';
import { sandboxMetrics } from '../metrics.js';
import type { Bubblewrap } from './bubblewrap.js';
import { LocalCopies, WorkspaceFullError, type WorkspaceCopy } from './local-copies.js';
import { WorkspaceBusyError, type WorkspaceLeases } from './workspace-lease.js';
import { SKILLS_MOUNT, WORKSPACE_MOUNT, WorkspaceFs, WorkspaceFsError } from './workspace-fs.js';

const tracer = trace.getTracer('@conveyor/sandbox');
const headerGetter = {
  get: (h: MsgHdrs | undefined, k: string) => h?.get(k) || undefined,
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
};

export interface SandboxServerOptions {
  nc: NatsConnection;
  topology: Topology;
  logger: Logger;
  leases: WorkspaceLeases;
  copies: LocalCopies;
  bubblewrap: Bubblewrap;
  /** Calls this replica runs at once; more wait, up to `queued`, and past that are answered `busy`. */
  concurrency: number;
  queued: number;
  owner?: { uid: number; gid: number };
  /** Whether an error means Postgres or Redis is briefly unreachable (answered `unavailable`). */
  isOutage: (err: unknown) => boolean;
}

/** Ops after which the agent may expect its outbox folder to exist. */
const OUTBOX_OPS: ReadonlySet<SandboxOp['op']> = new Set(['exec', 'write', 'edit']);
const QUERY_ID = /^[0-9a-f-]{36}$/;

/** Ops that may change the workspace: their folder is measured (and stored when changed) after the call. */
const CHANGING_OPS: ReadonlySet<SandboxOp['op']> = new Set(['exec', 'write', 'edit', 'put', 'take']);

/**
 * The sandbox role: answers `SandboxRequest`s on `topology.subjects.sandboxCall` in the queue group
 * `sandbox`, so calls spread over its replicas. A call holds its workspace's lease, brings this
 * replica's copy to the stored revision, runs the operation (a command under bubblewrap, or a file
 * tool on the host folder with its path checks), stores the workspace when it changed, and answers.
 * Each call is a SERVER span under the runner's tool span; each failure is counted by code.
 */
export class SandboxServer {
  private subscription: Subscription | undefined;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(private readonly o: SandboxServerOptions) {}

  start(): void {
    this.subscription = this.o.nc.subscribe(this.o.topology.subjects.sandboxCall, {
      queue: 'sandbox',
      callback: (err, msg) => {
        if (err) return;
        const done = this.handle(msg).finally(() => this.inFlight.delete(done));
        this.inFlight.add(done);
      },
    });
  }

  /** Stops taking calls, lets the running ones finish (bounded by their wall time), then kills the rest. */
  async stop(graceMs = 30_000): Promise<void> {
    await this.subscription?.drain().catch(() => undefined);
    const all = Promise.allSettled([...this.inFlight]);
    const timer = setTimeout(() => this.stopping.abort(), graceMs);
    await all;
    clearTimeout(timer);
  }

  private async handle(msg: Msg): Promise<void> {
    const parent = propagation.extract(ROOT_CONTEXT, msg.headers, headerGetter);
    const span = tracer.startSpan('sandbox call', { kind: SpanKind.SERVER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': msg.subject } }, parent);
    const started = performance.now();
    let op = 'unknown';
    const reply = await context.with(trace.setSpan(parent, span), async (): Promise<SandboxReply> => {
      if (msg.data.byteLength > SANDBOX_LIMITS.messageBytes) return failure('invalid', `the request is over ${SANDBOX_LIMITS.messageBytes} bytes`);
      let json: unknown;
      try {
        json = msg.json();
      } catch {
        return failure('invalid', 'the request is not JSON');
      }
      const parsed = SandboxRequest.safeParse(json);
      if (!parsed.success) return failure('invalid', `the request is no SandboxRequest: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ').slice(0, 1000)}`);
      const req = parsed.data;
      op = req.call.op;
      span.updateName(`sandbox ${op}`);
      span.setAttributes({ 'conveyor.sandbox.op': op, 'conveyor.sandbox.workspace': req.workspace, ...(req.queryId ? { 'conveyor.query_id': req.queryId } : {}) });
      if (!(await this.admit())) return failure('busy', `this sandbox replica has ${this.o.concurrency} calls running and ${this.o.queued} waiting`);
      try {
        return await this.execute(req, span);
      } finally {
        this.release();
      }
    });
    const outcome = reply.ok ? 'ok' : reply.code;
    sandboxMetrics().calls.add(1, { op, outcome });
    sandboxMetrics().callDuration.record((performance.now() - started) / 1000, { op });
    if (!reply.ok) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: reply.code });
      span.setAttribute('error.type', reply.code);
      const log = reply.code === 'internal' || reply.code === 'unavailable' ? 'error' : 'info';
      this.o.logger[log]({ op, code: reply.code, error: reply.error, traceId: span.spanContext().traceId }, 'sandbox call failed');
    }
    span.end();
    msg.respond(JSON.stringify(reply));
  }

  private admit(): Promise<boolean> {
    if (this.running < this.o.concurrency) {
      this.running += 1;
      return Promise.resolve(true);
    }
    if (this.waiting.length >= this.o.queued) return Promise.resolve(false);
    return new Promise((resolve) => this.waiting.push(() => resolve(true)));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running -= 1;
  }

  private async execute(req: SandboxRequest, span: Span): Promise<SandboxReply> {
    try {
      return await this.o.leases.holding(req.workspace, async (lost) => {
        const signal = AbortSignal.any([lost, this.stopping.signal]);
        const copy = await this.o.copies.open(req.workspace);
        span.setAttributes({ 'conveyor.sandbox.revision': copy.revision, 'conveyor.sandbox.restored': copy.restored });
        if (copy.restored) sandboxMetrics().restores.add(1);
        let answer: Omit<Extract<SandboxReply, { ok: true }>, 'v' | 'ok' | 'revision'>;
        try {
          answer = await this.operate(req, copy, signal, span);
        } catch (err) {
          // The folder may be half-changed: the next call starts again from the stored revision.
          if (CHANGING_OPS.has(req.call.op)) this.o.copies.drop(req.workspace);
          throw err;
        }
        const revision = CHANGING_OPS.has(req.call.op) ? await this.o.copies.close(copy) : copy.revision;
        return { v: 1, ok: true, ...answer, revision };
      });
    } catch (err) {
      return this.failed(err);
    }
  }

  private async operate(req: SandboxRequest, copy: WorkspaceCopy, signal: AbortSignal, span: Span): Promise<Omit<Extract<SandboxReply, { ok: true }>, 'v' | 'ok' | 'revision'>> {
    const skills = await this.o.copies.skillDirs(req.skills);
    const files = new WorkspaceFs(copy.dir, skills, this.o.owner);
    const call = req.call;
    // The query's outbox is there before the agent writes (its path is in the agent's guidance); it
    // goes again when the run takes its files.
    if (req.queryId && OUTBOX_OPS.has(call.op) && QUERY_ID.test(req.queryId)) await files.makeFolder(`${WORKSPACE_MOUNT}/outbox/${req.queryId}`);
    switch (call.op) {
      case 'exec': {
        if (!isMounted(call.workdir)) throw new WorkspaceFsError('refused', `workdir ${call.workdir} is outside /workspace`);
        const result = await this.o.bubblewrap.run({ workspaceDir: copy.dir, skills, command: call.command, workdir: call.workdir, env: call.env, timeoutMs: call.timeoutSec * 1000, network: req.network, signal });
        span.setAttributes({ 'process.exit.code': result.exitCode ?? -1, 'conveyor.sandbox.duration_ms': Math.round(result.durationMs), 'conveyor.sandbox.output_bytes': result.outputBytes, 'conveyor.sandbox.network': req.network });
        for (const limit of result.limits) sandboxMetrics().limitsHit.add(1, { limit });
        if (result.limits.length) span.setAttribute('conveyor.sandbox.limits', result.limits.join(','));
        return { exec: result };
      }
      case 'read': return { text: await files.read(call.path, call.offset, call.limit) };
      case 'write': return { text: await files.write(call.path, call.content, call.mode) };
      case 'edit': return { text: await files.edit(call.path, call.oldString, call.newString) };
      case 'glob': return { text: await files.glob(call.pattern, call.path) };
      case 'grep': return { text: await files.grep(call.pattern, call.path, call.include) };
      case 'put': return { text: await files.put(call.files) };
      case 'take': {
        const taken = await files.take(call.path);
        return { files: taken.files, text: taken.left.length ? `left in place (past the transfer bounds): ${taken.left.slice(0, 20).join(', ')}` : '' };
      }
    }
  }

  private failed(err: unknown): SandboxReply {
    if (err instanceof WorkspaceFsError) {
      if (err.code === 'limit') sandboxMetrics().limitsHit.add(1, { limit: 'file_size' });
      return failure(err.code, err.message);
    }
    if (err instanceof WorkspaceFullError) {
      sandboxMetrics().limitsHit.add(1, { limit: 'workspace_size' });
      return failure('limit', err.message, 'workspace_size');
    }
    if (err instanceof WorkspaceBusyError) return failure('busy', err.message);
    if (err instanceof ArchiveError) return failure('internal', `the stored workspace could not be unpacked: ${err.message}`);
    if (this.o.isOutage(err)) return failure('unavailable', `storage unreachable: ${(err as Error).message}`);
    return failure('internal', (err as Error).message);
  }
}

function isMounted(raw: string): boolean {
  const p = path.posix.normalize(raw);
  return p === WORKSPACE_MOUNT || p.startsWith(`${WORKSPACE_MOUNT}/`) || p.startsWith(`${SKILLS_MOUNT}/`);
}

function failure(code: SandboxFailure, error: string, limit?: SandboxLimit): SandboxReply {
  return { v: 1, ok: false, code, error: error.slice(0, 4096), ...(limit ? { limit } : {}) };
}
