import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisKeys } from '@conveyor/contracts';
import { sign } from '@conveyor/http-bot';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { ALL_SERVICES, type ServiceName } from '../harness/services.js';
import { startOwnedNats, startOwnedRedis, type OwnedDependency } from '../harness/dependencies.js';
import { checkDeliveries, violations, type AcceptedMessage, type DeliveryReport } from './check.js';

/** A role's replica SIGKILLed, the broker or Redis faulted, or every replica of every role restarted with SIGTERM, one at a time. */
export type Fault = ServiceName | 'nats' | 'redis' | 'rolling';
export const ALL_FAULTS: Fault[] = ['runner', 'dispatcher', 'orchestrator', 'ingress', 'nats', 'redis', 'rolling'];

/**
 * The violations that fail a trial of this fault. A Redis data loss may cost the session leases (the
 * recovery contract), so a session's next message may start before the previous reply ended; nothing
 * may be lost or duplicated under any fault.
 */
export function faultViolations(fault: Fault, r: TrialResult): string[] {
  return [...violations(fault === 'redis' ? { ...r, orderViolations: [] } : r), ...r.stuck];
}

export interface TrialOptions {
  sessions: number;
  messagesPerSession: number;
  /** How long a dependency stays down. */
  outageMs: number;
  /** How long to wait for every accepted message's final callback. */
  deadlineMs: number;
}

export const DEFAULT_TRIAL: TrialOptions = { sessions: 10, messagesPerSession: 3, outageMs: 3_000, deadlineMs: 120_000 };

export interface TrialResult extends DeliveryReport {
  fault: Fault;
  /** Session leases and pipeline slots still held well after every reply ended (they must be freed). */
  stuck: string[];
  /** From the end of the fault (the process or dependency is back) to the last final callback, ms. */
  recoverMs: number;
}

const REPLICAS = 2;
const WORDS = Array.from({ length: 30 }, (_, i) => `w${i + 1}`).join(' ');

/**
 * The whole system with two replicas of every role on a NATS and a Redis of its own, a streaming fake
 * model and a callback receiver: a trial sends messages from several sessions, injects one fault while
 * the replies stream, and checks what the integrator received (see checkDeliveries).
 */
export class ChaosRig {
  private trialNo = 0;

  /** Reads what the services left in Redis (leases, slots); reconnects by itself after a Redis fault. */
  private readonly redisClient: Redis;

  private constructor(
    readonly sys: TestSystem,
    private readonly nats: OwnedDependency,
    private readonly redis: OwnedDependency,
  ) {
    this.redisClient = new Redis(redis.url);
    this.redisClient.on('error', () => undefined);
  }

  /** `serviceEnv` adds to (or overrides) the services' environment, e.g. LOG_LEVEL for a closer look. */
  static async start(serviceEnv: Record<string, string> = {}): Promise<ChaosRig> {
    const [nats, redis] = await Promise.all([startOwnedNats(), startOwnedRedis()]);
    const sys = await startTestSystem({
      startServices: false,
      natsUrl: nats.url,
      redisUrl: redis.url,
      serviceEnv: {
        // A dead runner's run comes back within seconds (production: 60 s).
        RUNNER_ACK_WAIT_MS: '3000',
        LOG_LEVEL: 'warn',
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
        OTEL_TRACES_EXPORTER: 'none',
        ...serviceEnv,
      },
    });
    const rig = new ChaosRig(sys, nats, redis);
    // One wave per replica: eight services booting at once starve each other on two cores.
    for (let i = 1; i <= REPLICAS; i++) await Promise.all(ALL_SERVICES.map((role) => sys.services.start(role, {}, `${role}-${i}`)));
    sys.llm.setDefault({ text: WORDS, tokensPerSecond: 30 });
    return rig;
  }

  async stop(): Promise<void> {
    this.redisClient.disconnect();
    await this.sys.stop();
    await Promise.all([this.nats.stop(), this.redis.stop()]);
  }

  /** POSTs one message to a live ingress replica, trying the other when one is down; undefined when none accepted it. */
  private async post(sessionId: string, text: string): Promise<string | undefined> {
    for (let tries = 0; tries < 40; tries++) {
      const live = this.sys.services.services.filter((s) => s.name === 'ingress' && s.child.exitCode === null && s.child.signalCode === null);
      const ingress = live[tries % Math.max(1, live.length)];
      if (ingress) {
        const raw = Buffer.from(JSON.stringify({ session_id: sessionId, message: [{ type: 'Plain', text }] }));
        const ts = String(Math.floor(Date.now() / 1000));
        const res = await fetch(`${ingress.url}/bots/${this.sys.botId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(this.sys.inboundSecret, ts, raw) },
          body: raw,
          signal: AbortSignal.timeout(10_000),
        }).catch(() => undefined);
        if (res?.status === 202) return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
        await res?.body?.cancel();
      }
      await delay(250);
    }
    return undefined;
  }

  async trial(fault: Fault, o: TrialOptions = DEFAULT_TRIAL): Promise<TrialResult> {
    const trial = ++this.trialNo;
    const runId = randomUUID().slice(0, 8);
    const accepted: AcceptedMessage[] = [];
    const received = this.sys.callbacks.received;
    const startCount = received.length;
    const sending = Promise.all(Array.from({ length: o.sessions }, async (_, s) => {
      const sessionId = `chaos-${runId}-${trial}-${s}`;
      for (let m = 0; m < o.messagesPerSession; m++) {
        const replyTo = await this.post(sessionId, `message ${m} of ${sessionId}`);
        if (replyTo) accepted.push({ sessionId, replyTo, position: m });
      }
    }));
    // Strike while replies stream: after a random number of callbacks of this trial.
    const strikeAfter = 1 + Math.floor(Math.random() * o.sessions * 4);
    await this.sys.callbacks.waitFor((all) => all.length - startCount >= strikeAfter, 60_000).catch(() => undefined);
    await this.inject(fault, o);
    const backAt = performance.now();
    await sending;
    const finals = () => new Set(received.slice(startCount).filter((c) => c.json?.is_final === true).map((c) => c.json.reply_to));
    await this.sys.callbacks.waitFor(() => accepted.every((a) => finals().has(a.replyTo)), o.deadlineMs).catch(() => undefined);
    const lastFinal = received.slice(startCount).filter((c) => c.json?.is_final === true).reduce((t, c) => Math.max(t, c.receivedAt), backAt);
    const report = checkDeliveries(accepted, received.slice(startCount));
    const stuck = await this.heldAfterReplies([...new Set(accepted.map((a) => a.sessionId))]);
    return { fault, ...report, stuck, recoverMs: Math.max(0, lastFinal - backAt) };
  }

  /**
   * Session leases and pipeline slots still held after every reply ended. A lease is freed when its
   * reply's final part went out; waiting a little covers that last step (and a lease re-taken after a
   * Redis loss runs out with its TTL, which is longer than a trial: so it counts too).
   */
  private async heldAfterReplies(sessionIds: string[]): Promise<string[]> {
    const keys = redisKeys(this.sys.prefix);
    const leaseKeys = sessionIds.map((sessionId) => keys.sessionLease({ botId: this.sys.botId, adapter: 'http-bot', launcherType: 'person', launcherId: sessionId }));
    const held = async () => {
      const out: string[] = [];
      for (const [i, key] of leaseKeys.entries()) if (await this.redisClient.exists(key)) out.push(`session ${sessionIds[i]} still leased`);
      const slots = await this.redisClient.zcard(keys.pipelineSlots());
      if (slots > 0) out.push(`${slots} pipeline slot(s) still taken`);
      return out;
    };
    const deadline = Date.now() + 20_000;
    let out = await held();
    while (out.length > 0 && Date.now() < deadline) {
      await delay(250);
      out = await held();
    }
    return out;
  }

  private async inject(fault: Fault, o: TrialOptions): Promise<void> {
    if (fault === 'rolling') {
      // A rolling restart under load, as a deployment does it: each replica drains and is replaced.
      for (const role of ALL_SERVICES) {
        for (let i = 1; i <= REPLICAS; i++) {
          await this.sys.services.kill(`${role}-${i}`, 'SIGTERM');
          await this.sys.services.start(role, {}, `${role}-${i}`);
        }
      }
      return;
    }
    if (fault === 'nats' || fault === 'redis') {
      const dep = fault === 'nats' ? this.nats : this.redis;
      await dep.kill();
      await delay(o.outageMs);
      await dep.start();
      return;
    }
    const victim = `${fault}-${1 + Math.floor(Math.random() * REPLICAS)}`;
    await this.sys.services.kill(victim, 'SIGKILL');
    await this.sys.services.start(fault, {}, victim);
  }
}
