import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisKeys } from '@conveyor/contracts';
import { sign } from '@conveyor/http-bot';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';
import { ALL_SERVICES, type ServiceName } from '../harness/services.js';
import { startOwnedNats, startOwnedRedis, type OwnedDependency } from '../harness/dependencies.js';
import { startOwnedNatsCluster, type OwnedNatsCluster } from '../harness/nats-cluster.js';
import { startOwnedRedisSentinel, type OwnedRedisSentinel } from '../harness/redis-sentinel.js';
import { checkDeliveries, violations, type AcceptedMessage, type DeliveryReport } from './check.js';
import type { ReceivedCallback } from '../fakes/callback-receiver.js';

/**
 * A role's replica SIGKILLed, the broker or Redis faulted, every replica of every role restarted with
 * SIGTERM one at a time, or (`nats-node`, on a rig started with `natsCluster`) one node of a 3-node
 * NATS cluster SIGKILLed and restarted, or (`redis-sentinel`, on a rig started with `redisSentinel`)
 * the Redis master of a Sentinel set SIGKILLed and failed over, or (`upgrade`, on a rig started with
 * `previousRelease`) every replica rolled from the previous release to this tree.
 */
export type Fault = ServiceName | 'nats' | 'redis' | 'rolling' | 'upgrade' | 'nats-node' | 'redis-sentinel';
/** The faults of a rig on one NATS server. */
export const ALL_FAULTS: Fault[] = ['runner', 'dispatcher', 'orchestrator', 'ingress', 'nats', 'redis', 'rolling'];
/** The faults of a rig on a NATS cluster (`ChaosRig.start({}, { natsCluster: true })`). */
export const CLUSTER_FAULTS: Fault[] = ['nats-node'];
/** The faults of a rig on a Redis Sentinel set (`ChaosRig.start({}, { redisSentinel: true })`). */
export const SENTINEL_FAULTS: Fault[] = ['redis-sentinel'];
/** The faults of a rig given another release's built checkout (`ChaosRig.start({}, { previousRelease })`). */
export const UPGRADE_FAULTS: Fault[] = ['upgrade'];
/**
 * The faults of a rig whose agent runs a command in the sandbox before each answer
 * (`ChaosRig.start({}, { sandbox: true })`): a sandbox replica SIGKILLed while commands run.
 */
export const SANDBOX_FAULTS: Fault[] = ['sandbox'];
/** What the sandbox rig's model runs before it answers: long enough that a kill lands mid-command. */
export const SANDBOX_RIG_COMMAND = 'sleep 2; echo checked >> checks.txt; wc -l < checks.txt';

/** Replicas of every stream on the cluster rig. */
export const CLUSTER_STREAM_REPLICAS = 3;
/** The cluster rig's pipeline cap (PIPELINE_CONCURRENCY), small so a burst trial has queries waiting behind it. */
export const CLUSTER_PIPELINE_CAP = 4;
/** Sessions of a burst trial: all send at once, three times as many as the pipeline cap admits. */
const BURST_SESSIONS = 3 * CLUSTER_PIPELINE_CAP;

/**
 * The violations that fail a trial of this fault. A Redis data loss may cost the session leases (the
 * recovery contract), so a session's next message may start before the previous reply ended; nothing
 * may be lost or duplicated under any fault.
 */
export function faultViolations(fault: Fault, r: TrialResult): string[] {
  const probe = r.node && (r.node.probeAcceptMs === undefined ? ['the message sent while the node was away was not accepted'] : r.node.probeAnswerMs === undefined ? ['the message sent while the node was away was not answered'] : []);
  const f = r.failover;
  const failover = f && (f.probeAcceptMs === undefined ? ['the message sent after the master was killed was not accepted'] : f.probeAnswerMs === undefined ? ['the message sent after the master was killed was not answered'] : f.resumedMs === undefined ? ['no callback came after the failover'] : []);
  // A failover loses what the replica had not received yet: a Redis data loss, with its contract.
  const redisLoss = fault === 'redis' || fault === 'redis-sentinel';
  return [...violations(redisLoss ? { ...r, orderViolations: [] } : r), ...r.stuck, ...(probe ?? []), ...(failover ?? [])];
}

/** One line of figures per trial, for the test's output (timings are reported, not asserted). */
export function nodeFaultLine(r: TrialResult): string {
  const n = r.node;
  if (!n) return `${r.fault}: not a nats-node trial`;
  const s = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
  return `killed ${n.victim} (${n.picked}${n.led.length ? `, led ${n.led.join('+')}` : ''}), ${n.wiped ? 'wiped' : 'on its store'}${n.burst ? ', burst' : ''}: ` +
    `accepted ${r.accepted} lost ${r.lost.length} duplicated ${r.duplicatedFinals.length} out of order ${r.orderViolations.length + r.sequenceViolations.length + r.afterFinal.length}; ` +
    `away ${s(n.awayMs)}, probe accepted in ${s(n.probeAcceptMs)} and answered in ${s(n.probeAnswerMs)}, replicas current ${s(n.catchUpMs)} after the restart, last final ${s(r.recoverMs)} after it`;
}

/** One line of figures per `redis-sentinel` trial (reported, not asserted). */
export function failoverLine(r: TrialResult): string {
  const f = r.failover;
  if (!f) return `${r.fault}: not a redis-sentinel trial`;
  const s = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
  return `killed master :${f.killedPort}, promoted :${f.promotedPort} in ${s(f.failoverMs)}; first callback ${s(f.resumedMs)} after the kill; ` +
    `${f.inFlight} replies in flight at the kill${f.unreplicatedBytes !== undefined ? `, ${f.unreplicatedBytes} B of writes unreplicated` : ''}; accepted ${r.accepted} lost ${r.lost.length} duplicated ${r.duplicatedFinals.length} out of order ${r.orderViolations.length} (session) ${r.sequenceViolations.length + r.afterFinal.length} (reply) resent ${r.resent}; ` +
    `probe accepted in ${s(f.probeAcceptMs)} and answered in ${s(f.probeAnswerMs)}; old master a replica again ${s(f.rejoinMs)} after its restart; last final ${s(r.recoverMs)} after the promotion`;
}

/** What a `redis-sentinel` trial did and measured (all from the SIGKILL of the master, ms). */
export interface FailoverReport {
  killedPort: number;
  promotedPort: number;
  /** Until the Sentinels named the replica as the master. */
  failoverMs: number;
  /** Until the first callback received after that (replies resumed); undefined: none came. */
  resumedMs?: number;
  /** Accepted messages whose final part had not come when the master was killed. */
  inFlight: number;
  /** With TrialOptions.unreplicatedMs: bytes of the replication stream the promoted replica never received. */
  unreplicatedBytes?: number;
  /** A message sent just after the kill from a session of its own: until the ingress's 202, and until its final callback. */
  probeAcceptMs?: number;
  probeAnswerMs?: number;
  /** From restarting the killed node (empty) until the Sentinels had made it the new master's replica in sync. */
  rejoinMs: number;
}

/** What a `nats-node` trial did and measured. */
export interface NodeFaultReport {
  /** The node killed, and whether it was picked as a stream's leader or as a follower. */
  victim: string;
  picked: 'leader' | 'follower';
  /** Which of the queries, runs and events streams and of the role consumers it led when it was killed. */
  led: string[];
  /** Restarted with its store wiped (a replaced node) or on its own store. */
  wiped: boolean;
  /** More sessions sending at once than the pipeline cap admits. */
  burst: boolean;
  /** How long the node was away, ms. */
  awayMs: number;
  /**
   * A message sent just after the kill, from a session of its own: from sending to the ingress's 202,
   * and to its final callback, ms (undefined: not accepted / not answered).
   */
  probeAcceptMs?: number;
  probeAnswerMs?: number;
  /** From the restart until every replica of every stream was current again, ms. */
  catchUpMs: number;
}

export interface TrialOptions {
  sessions: number;
  messagesPerSession: number;
  /** How long a dependency stays down. */
  outageMs: number;
  /** How long to wait for every accepted message's final callback. */
  deadlineMs: number;
  /** `redis-sentinel`: the master's writes of this many ms before its SIGKILL never reach the replica (see killMaster). */
  unreplicatedMs?: number;
  /**
   * Every session keeps talking until the fault is over, as users do through a deployment: it sends a
   * message, waits for its final part, and sends the next (at least `messagesPerSession`, at most
   * MAX_MESSAGES_THROUGH_FAULT). Without it each session sends its messages at once.
   */
  sendThroughFault?: boolean;
}

/** The most messages one session sends in a `sendThroughFault` trial. */
const MAX_MESSAGES_THROUGH_FAULT = 40;
/** How long a `sendThroughFault` session waits for a final part before it sends its next message anyway. */
const FINAL_WAIT_MS = 30_000;

export const DEFAULT_TRIAL: TrialOptions = { sessions: 10, messagesPerSession: 3, outageMs: 3_000, deadlineMs: 120_000 };

export interface TrialResult extends DeliveryReport {
  fault: Fault;
  /** Session leases and pipeline slots still held well after every reply ended (they must be freed). */
  stuck: string[];
  /** From the end of the fault (the process or dependency is back) to the last final callback, ms. */
  recoverMs: number;
  node?: NodeFaultReport;
  failover?: FailoverReport;
  /**
   * When a message was lost or a lease or slot stayed held: for each such session, what Redis holds of
   * it (lease holder and TTL, queue, finished set, pipeline slots, reply state) and every service log
   * line naming the session or one of its queries. Empty when the trial was clean.
   */
  diagnostics: string;
}

const REPLICAS = 2;
const REPLICA_NUMBERS = Array.from({ length: REPLICAS }, (_, i) => i + 1);
/** Every replica, role after role (a restart of one role's replicas at a time). */
const BY_ROLE = ALL_SERVICES.flatMap((role) => REPLICA_NUMBERS.map((i) => [role, i] as const));
/** Every replica, the first of every role first (two versions of every role side by side midway). */
const BY_REPLICA = REPLICA_NUMBERS.flatMap((i) => ALL_SERVICES.map((role) => [role, i] as const));

/** [member, score] pairs of a WITHSCORES reply. */
function pairs(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}
const WORDS = Array.from({ length: 30 }, (_, i) => `w${i + 1}`).join(' ');

/**
 * The whole system with two replicas of every role on a NATS and a Redis of its own, a streaming fake
 * model and a callback receiver: a trial sends messages from several sessions, injects one fault while
 * the replies stream, and checks what the integrator received (see checkDeliveries).
 */
export class ChaosRig {
  private trialNo = 0;
  private nodeTrialNo = 0;
  /** A role's own environment, given again when a killed replica of it is restarted. */
  private readonly roleEnv: Partial<Record<ServiceName, Record<string, string>>> = {};

  /** Reads what the services left in Redis (leases, slots); reconnects by itself after a Redis fault. */
  private client: Redis;

  private constructor(
    readonly sys: TestSystem,
    private readonly nats: OwnedDependency | OwnedNatsCluster,
    private readonly redis: OwnedDependency | OwnedRedisSentinel,
    private readonly previousRelease: string | undefined,
  ) {
    this.client = this.newClient();
  }

  private newClient(): Redis {
    const c = 'masterName' in this.redis ? this.redis.client() : new Redis(this.redis.url);
    c.on('error', () => undefined);
    return c;
  }

  /**
   * The rig's client; one a failover left closed for good (a Sentinel client can end when it finds no
   * master for a while) is replaced, so the rig's own reads never fail a trial.
   */
  private get redisClient(): Redis {
    if (this.client.status === 'end') this.client = this.newClient();
    return this.client;
  }

  /**
   * `serviceEnv` adds to (or overrides) the services' environment, e.g. LOG_LEVEL for a closer look.
   * `natsCluster`: a 3-node NATS cluster instead of one server, every stream at R3, every service
   * given all three nodes, and a pipeline cap of CLUSTER_PIPELINE_CAP (for the `nats-node` fault).
   * `redisSentinel`: a Redis master, one replica and three Sentinels instead of one Redis, every service
   * given the Sentinels (for the `redis-sentinel` fault).
   * `previousRelease`: the root of a checkout of an earlier release with its services built (`npm ci`,
   * `node scripts/ensure-built.mjs`), for the `upgrade` fault. It must share this tree's database schema.
   * `sandbox`: the pipeline's agent has the sandbox (two replicas) and the model runs
   * SANDBOX_RIG_COMMAND with `exec` before every answer (for the `sandbox` fault).
   */
  static async start(serviceEnv: Record<string, string> = {}, options: { natsCluster?: boolean; redisSentinel?: boolean; previousRelease?: string; sandbox?: boolean } = {}): Promise<ChaosRig> {
    const previous = options.previousRelease;
    if (previous !== undefined) {
      const missing = ALL_SERVICES.map((role) => path.join(previous, `services/${role}/dist/main.js`)).filter((f) => !existsSync(f));
      if (missing.length) throw new Error(`previousRelease ${previous} has no built services (${missing.join(', ')}): run npm ci and node scripts/ensure-built.mjs there`);
    }
    const [nats, redis] = await Promise.all([options.natsCluster ? startOwnedNatsCluster(3) : startOwnedNats(), options.redisSentinel ? startOwnedRedisSentinel() : startOwnedRedis()]);
    const sentinelEnv = 'masterName' in redis ? redis.env : {};
    let sys: TestSystem;
    try {
      sys = await startTestSystem({
        startServices: false,
        ...(options.sandbox ? { pipelineConfig: { ai: { 'local-agent': { 'box-enabled': true } } } } : {}),
        natsUrl: nats.url,
        redisUrl: redis.url,
        serviceEnv: {
          // A dead runner's run comes back within seconds (production: 60 s).
          RUNNER_ACK_WAIT_MS: '3000',
          LOG_LEVEL: 'warn',
          OTEL_EXPORTER_OTLP_ENDPOINT: '',
          OTEL_TRACES_EXPORTER: 'none',
          ...(options.natsCluster ? { NATS_STREAM_REPLICAS: String(CLUSTER_STREAM_REPLICAS), PIPELINE_CONCURRENCY: String(CLUSTER_PIPELINE_CAP) } : {}),
          ...sentinelEnv,
          ...serviceEnv,
        },
      });
    } catch (err) {
      await Promise.all([nats.stop(), redis.stop()]);
      throw err;
    }
    const rig = new ChaosRig(sys, nats, redis, previous);
    try {
      if ('masterName' in redis) await redis.waitHealthy();
      // One wave per replica: eight services booting at once starve each other on two cores.
      for (let i = 1; i <= REPLICAS; i++) await Promise.all(ALL_SERVICES.map((role) => sys.services.start(role, {}, `${role}-${i}`)));
      if (options.sandbox) {
        // A uid of the rig's own for the commands, so their process limit counts no one else's.
        const uid = String(64_000 + Math.floor(Math.random() * 1_000));
        rig.roleEnv.sandbox = { SANDBOX_RUN_AS_UID: uid, SANDBOX_RUN_AS_GID: uid };
        for (const i of REPLICA_NUMBERS) await sys.services.start('sandbox', rig.roleEnv.sandbox, `sandbox-${i}`);
      }
    } catch (err) {
      await rig.stop().catch(() => undefined);
      throw err;
    }
    const answer = { text: WORDS, tokensPerSecond: 30 };
    // With the sandbox: a command first, then the answer once the command's result (or error) is back.
    sys.llm.setDefault(options.sandbox
      ? (body) => (body.messages?.some((m) => m.role === 'tool') ? answer : { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: SANDBOX_RIG_COMMAND }) }] })
      : answer);
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

  async trial(fault: Fault, options: TrialOptions = DEFAULT_TRIAL): Promise<TrialResult> {
    const trial = ++this.trialNo;
    const runId = randomUUID().slice(0, 8);
    const plan = fault === 'nats-node' ? this.nodeFaultPlan() : undefined;
    const o = plan?.burst ? { ...options, sessions: Math.max(options.sessions, BURST_SESSIONS) } : options;
    const accepted: AcceptedMessage[] = [];
    const received = this.sys.callbacks.received;
    const startCount = received.length;
    if (fault === 'upgrade') await this.runPreviousRelease();
    let faultOver = false;
    const more = (m: number) => m < o.messagesPerSession || (o.sendThroughFault === true && !faultOver && m < MAX_MESSAGES_THROUGH_FAULT);
    const sending = Promise.all(Array.from({ length: o.sessions }, async (_, s) => {
      const sessionId = `chaos-${runId}-${trial}-${s}`;
      for (let m = 0; more(m); m++) {
        const replyTo = await this.post(sessionId, `message ${m} of ${sessionId}`);
        if (replyTo) accepted.push({ sessionId, replyTo, position: m });
        if (replyTo && o.sendThroughFault) {
          await this.sys.callbacks.waitFor((all) => all.some((c) => c.json?.is_final === true && c.json.reply_to === replyTo), FINAL_WAIT_MS).catch(() => undefined);
        }
      }
    }));
    // Strike while replies stream: after a random number of callbacks of this trial.
    const strikeAfter = 1 + Math.floor(Math.random() * o.sessions * 4);
    await this.sys.callbacks.waitFor((all) => all.length - startCount >= strikeAfter, 60_000).catch(() => undefined);
    const node = plan ? await this.killNode(plan, o, `chaos-${runId}-${trial}-probe`, accepted) : undefined;
    const failover = fault === 'redis-sentinel' ? await this.failOverRedis(`chaos-${runId}-${trial}-probe`, accepted, startCount, o.unreplicatedMs) : undefined;
    if (!plan && !failover) await this.inject(fault, o);
    faultOver = true;
    const backAt = failover ? failover.promotedAt : performance.now();
    await sending;
    const finals = () => new Set(received.slice(startCount).filter((c) => c.json?.is_final === true).map((c) => c.json.reply_to));
    await this.sys.callbacks.waitFor(() => accepted.every((a) => finals().has(a.replyTo)), o.deadlineMs).catch(() => undefined);
    const lastFinal = received.slice(startCount).filter((c) => c.json?.is_final === true).reduce((t, c) => Math.max(t, c.receivedAt), backAt);
    const report = checkDeliveries(accepted, received.slice(startCount));
    const stuck = await this.heldAfterReplies([...new Set(accepted.map((a) => a.sessionId))]);
    const troubled = new Set([
      ...accepted.filter((a) => report.lost.includes(a.replyTo)).map((a) => a.sessionId),
      ...report.sequenceViolations.flatMap((v) => accepted.find((a) => v.startsWith(`${a.sessionId}|`) || v.startsWith(`${a.replyTo}:`))?.sessionId ?? []),
      ...stuck.flatMap((s) => /^session (\S+) still leased$/.exec(s)?.[1] ?? []),
    ]);
    const diagnostics = troubled.size > 0 || stuck.length > 0 ? await this.diagnose([...troubled], accepted, received.slice(startCount), backAt) : '';
    return { fault, ...report, stuck, diagnostics, recoverMs: Math.max(0, lastFinal - backAt), ...(node ? { node } : {}), ...(failover ? { failover: failover.report } : {}) };
  }

  /**
   * SIGKILLs the Redis master of the Sentinel set while replies stream and measures the failover: the
   * Sentinels promote the replica by themselves, the services find it through them. A message is sent
   * right after the kill from a session of its own and followed to its final part; then the killed node
   * is started again, empty, and the Sentinels make it the new master's replica (ready for the next trial).
   */
  private async failOverRedis(probeSession: string, accepted: AcceptedMessage[], startCount: number, unreplicatedMs = 0): Promise<{ report: FailoverReport; promotedAt: number }> {
    const set = this.redis;
    if (!('masterName' in set)) throw new Error('the redis-sentinel fault needs a rig on a Sentinel set: ChaosRig.start({}, { redisSentinel: true })');
    const received = this.sys.callbacks.received;
    const finalsBefore = new Set(received.slice(startCount).filter((c) => c.json?.is_final === true).map((c) => c.json.reply_to));
    const inFlight = accepted.filter((a) => !finalsBefore.has(a.replyTo)).length;
    const { port: killedPort, unreplicatedBytes } = await set.killMaster({ unreplicatedMs });
    const killedAt = performance.now();
    const probe = (async () => {
      const sentAt = performance.now();
      const replyTo = await this.post(probeSession, 'probe after the master was killed');
      if (!replyTo) return {};
      const probeAcceptMs = performance.now() - killedAt;
      accepted.push({ sessionId: probeSession, replyTo, position: 0 });
      const final = await this.sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === replyTo && c.json?.is_final === true), 90_000).catch(() => undefined);
      return { probeAcceptMs, ...(final ? { probeAnswerMs: performance.now() - sentAt } : {}) };
    })();
    const promotedPort = await set.waitFailover(killedPort, 60_000);
    const promotedAt = performance.now();
    const firstAfter = await this.sys.callbacks.waitFor((all) => all.some((c) => c.receivedAt > promotedAt), 60_000).then(() => received.find((c) => c.receivedAt > promotedAt)).catch(() => undefined);
    const probed = await probe;
    await set.restart(killedPort);
    const restartedAt = performance.now();
    await set.waitHealthy(90_000);
    return {
      promotedAt,
      report: {
        killedPort, promotedPort, failoverMs: promotedAt - killedAt, inFlight, ...probed,
        ...(unreplicatedBytes !== undefined ? { unreplicatedBytes } : {}),
        ...(firstAfter ? { resumedMs: firstAfter.receivedAt - killedAt } : {}),
        rejoinMs: performance.now() - restartedAt,
      },
    };
  }

  /**
   * The n-th `nats-node` trial's choices, so consecutive trials cover each pair of them: a stream
   * leader or a follower; restarted wiped or on its store; a burst or the usual load.
   */
  private nodeFaultPlan(): { picked: 'leader' | 'follower'; wiped: boolean; burst: boolean; stream: 'runs' | 'events' } {
    const n = this.nodeTrialNo++;
    const a = n % 2;
    const b = ((n + 1) >> 1) % 2;
    // Four trials in a row form an orthogonal array: each pair of choices comes up once.
    return { picked: a === 0 ? 'leader' : 'follower', wiped: b === 0, burst: (a ^ b) === 0, stream: (n >> 1) % 2 === 0 ? 'runs' : 'events' };
  }

  /** The NATS cluster of a rig started with `natsCluster`. */
  get natsCluster(): OwnedNatsCluster | undefined {
    return 'nodes' in this.nats ? this.nats : undefined;
  }

  private cluster(): OwnedNatsCluster {
    if (!('nodes' in this.nats)) throw new Error('the nats-node fault needs a rig on a NATS cluster: ChaosRig.start({}, { natsCluster: true })');
    return this.nats;
  }

  /**
   * SIGKILLs one node: the leader of the runs or events stream, or a node leading neither. While it is
   * away, one message is sent from a session of its own and followed to its final callback; then the
   * node is restarted (on its store or wiped) and the streams are waited on until every replica is
   * current again, by themselves.
   */
  private async killNode(plan: ReturnType<ChaosRig['nodeFaultPlan']>, o: TrialOptions, probeSession: string, accepted: AcceptedMessage[]): Promise<NodeFaultReport> {
    const cluster = this.cluster();
    const streams = this.sys.topology.streams;
    const watched = { queries: streams.queries.name, runs: streams.runs.name, events: streams.events.name };
    const leaders = await waitUntil('stream leaders', async () => {
      const out: Record<string, string | undefined> = {};
      for (const [k, name] of Object.entries(watched)) out[k] = await cluster.streamLeader(name);
      return Object.values(out).every(Boolean) ? (out as Record<keyof typeof watched, string>) : undefined;
    }, 30_000, 250);
    let victim: string;
    if (plan.picked === 'leader') {
      // A burst trial prefers the runs or events leader that also leads the queries stream, which the burst fills.
      const candidates = [leaders[plan.stream], leaders[plan.stream === 'runs' ? 'events' : 'runs']];
      victim = plan.burst ? candidates.find((c) => c === leaders.queries) ?? candidates[0] : candidates[0];
    } else {
      const others = cluster.nodes.map((n) => n.name).filter((n) => n !== leaders.runs && n !== leaders.events);
      // Three nodes and two streams: one node leads neither, unless both share a leader (then two do).
      victim = others.find((n) => n !== leaders.queries) ?? others[0] ?? cluster.nodes.map((n) => n.name).find((n) => n !== leaders.runs)!;
    }
    // Consumers elect leaders of their own: a stream's follower may still lead a consumer of it.
    const consumers = this.sys.topology.consumers;
    const consumerLeaders = await Promise.all((['orchestrator', 'runner', 'dispatcher'] as const).map(async (c) => [`${c} consumer`, await cluster.consumerLeader(consumers[c].stream, consumers[c].durable)] as const));
    const led = [...Object.entries(leaders), ...consumerLeaders].filter(([, l]) => l === victim).map(([k]) => k);
    const node = cluster.node(victim);
    await node.kill();
    const killedAt = performance.now();

    const sentAt = performance.now();
    const replyTo = await this.post(probeSession, `probe while ${victim} is away`);
    const probeAcceptMs = replyTo ? performance.now() - sentAt : undefined;
    let probeAnswerMs: number | undefined;
    if (replyTo) {
      accepted.push({ sessionId: probeSession, replyTo, position: 0 });
      const final = await this.sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === replyTo && c.json?.is_final === true), 60_000).catch(() => undefined);
      if (final) probeAnswerMs = performance.now() - sentAt;
    }
    const left = o.outageMs - (performance.now() - killedAt);
    if (left > 0) await delay(left);
    const awayMs = performance.now() - killedAt;
    await node.start({ wipe: plan.wiped });
    const restartedAt = performance.now();
    await cluster.waitStreamsCurrent(Object.values(streams).map((s) => s.name), 120_000);
    return {
      victim, picked: plan.picked, led, wiped: plan.wiped, burst: plan.burst, awayMs,
      ...(probeAcceptMs !== undefined ? { probeAcceptMs } : {}),
      ...(probeAnswerMs !== undefined ? { probeAnswerMs } : {}),
      catchUpMs: performance.now() - restartedAt,
    };
  }

  /**
   * Session leases and pipeline slots still held after every reply ended. A lease is freed when the batch
   * holding its reply's last event is taken; waiting a little covers that last step (and a lease re-taken after a
   * Redis loss runs out with its TTL, which is longer than a trial: so it counts too).
   */
  private async heldAfterReplies(sessionIds: string[]): Promise<string[]> {
    const keys = redisKeys(this.sys.prefix);
    const leaseKeys = sessionIds.map((sessionId) => keys.sessionLease({ botId: this.sys.botId, adapter: 'http-bot', launcherType: 'person', launcherId: sessionId }));
    const held = async () => {
      const out: string[] = [];
      for (const [i, key] of leaseKeys.entries()) if (await this.redisClient.exists(key)) out.push(`session ${sessionIds[i]} still leased`);
      let slots = 0;
      for (const key of keys.allPipelineSlots()) slots += await this.redisClient.zcard(key);
      if (slots > 0) out.push(`${slots} pipeline slot(s) still taken`);
      return out;
    };
    // The rig's own client may be between masters too (a Sentinel trial): an error is asked again.
    const asked = () => held().catch((err: Error) => [`could not read Redis: ${err.message}`]);
    const deadline = Date.now() + 20_000;
    let out = await asked();
    while (out.length > 0 && Date.now() < deadline) {
      await delay(250);
      out = await asked();
    }
    return out;
  }

  /**
   * What Redis and the services' logs say about these sessions (see TrialResult.diagnostics). Reply
   * parts are shown by name only: their bodies are the fake model's words.
   */
  private async diagnose(sessionIds: string[], accepted: readonly AcceptedMessage[], received: readonly ReceivedCallback[], faultAt: number): Promise<string> {
    const keys = redisKeys(this.sys.prefix);
    const r = this.redisClient;
    const out: string[] = [];
    const slots = await Promise.all(keys.allPipelineSlots().map((key) => r.zrange(key, '0', '-1', 'WITHSCORES')))
      .then((all) => all.flat()).catch((err: Error) => [`error: ${err.message}`]);
    const serverNow = await r.time().then(([s, us]) => Number(s) * 1000 + Math.floor(Number(us) / 1000)).catch(() => Date.now());
    out.push(`pipeline slots (query id, expiry in ms): ${JSON.stringify(pairs(slots).map(([q, at]) => [q, Number(at) - serverNow]))}`);
    const logs = this.sys.services.allLogs().split('\n');
    for (const sessionId of sessionIds) {
      const chat = { botId: this.sys.botId, adapter: 'http-bot' as const, launcherType: 'person' as const, launcherId: sessionId };
      const replySession = { botId: this.sys.botId, adapter: 'http-bot' as const, sessionId };
      const mine = accepted.filter((a) => a.sessionId === sessionId).sort((a, b) => a.position - b.position);
      out.push(`session ${sessionId}: accepted ${mine.map((a) => `#${a.position} reply_to ${a.replyTo}`).join(', ')}`);
      // What the integrator got, in arrival order (ms from the fault's end): the numbering as sent.
      const callbacks = received.filter((c) => c.json?.session_id === sessionId).map((c) =>
        `#${mine.find((a) => a.replyTo === c.json.reply_to)?.position ?? '?'} seq ${c.json.sequence}${c.json.is_final ? ' final' : ''}${c.json.stream ? ' stream' : ''} ${Math.round(c.receivedAt - faultAt)} ms`);
      out.push(`  callbacks: ${callbacks.join(', ')}`);
      const holder = await r.get(keys.sessionLease(chat));
      out.push(`  lease: ${holder ?? '(free)'}${holder ? ` ttl ${await r.pttl(keys.sessionLease(chat))} ms` : ''}`);
      out.push(`  queue: ${JSON.stringify(await r.zrange(keys.sessionQueue(chat), '0', '-1', 'WITHSCORES'))}`);
      out.push(`  first-seen: ${JSON.stringify(await r.hgetall(keys.sessionFirstSeen(chat)))} last-seen: ${JSON.stringify(await r.hgetall(keys.sessionLastSeen(chat)))}`);
      const finished = await r.zrange(keys.sessionFinished(chat), '0', '-1');
      out.push(`  finished: ${JSON.stringify(finished)}`);
      const replies = await r.zrange(keys.replySessionReplies(replySession), '0', '-1', 'WITHSCORES');
      out.push(`  replies: ${JSON.stringify(replies)} sender: ${(await r.get(keys.replySessionSender(replySession))) ?? '(none)'} numbering: ${JSON.stringify(await r.hgetall(keys.replySessionSequence(replySession)))}`);
      out.push(`  active-set score: ${(await r.zscore(keys.replyActiveSessions(replySession), JSON.stringify([replySession.botId, replySession.adapter, sessionId]))) ?? '(not in it)'}`);
      const queryIds = new Set([...(holder ? [holder] : []), ...finished, ...pairs(replies).map(([q]) => q)]);
      for (const line of logs) if (line.includes(sessionId)) for (const m of line.matchAll(/"queryId":"([^"]+)"/g)) queryIds.add(m[1]!);
      for (const q of queryIds) {
        const h = await r.hgetall(keys.reply(replySession, q));
        const fields = Object.entries(h).map(([k, v]) => (k.startsWith('p:') || k === 'batch' || k === 'last' ? `${k}(${v.length} B)` : `${k}=${v}`));
        out.push(`  reply ${q}: ${fields.length ? fields.join(' ') : '(no state)'}; slot ${slots.includes(q) ? 'held' : 'free'}`);
      }
      out.push('  log lines:');
      for (const line of logs) if (line.includes(sessionId) || [...queryIds].some((q) => line.includes(q))) out.push(`    ${line}`);
    }
    return out.join('\n');
  }

  /** Replaces every replica with one of the previous release (before an `upgrade` trial's messages). */
  private async runPreviousRelease(): Promise<void> {
    if (this.previousRelease === undefined) throw new Error('the upgrade fault needs a rig given a previous release: ChaosRig.start({}, { previousRelease })');
    await this.replaceEach(BY_REPLICA, this.previousRelease);
  }

  /**
   * Replaces replicas one after another as a deployment does: each is sent SIGTERM (it drains) and a
   * new one starts from `codeRoot` (this checkout by default) before the next is touched.
   */
  private async replaceEach(order: ReadonlyArray<readonly [ServiceName, number]>, codeRoot?: string): Promise<void> {
    for (const [role, i] of order) {
      await this.sys.services.kill(`${role}-${i}`, 'SIGTERM');
      await this.sys.services.start(role, {}, `${role}-${i}`, codeRoot);
    }
  }

  private async inject(fault: Fault, o: TrialOptions): Promise<void> {
    if (fault === 'upgrade') {
      // A rolling deployment from the previous release to this one under load: the first replica of
      // every role is replaced, then the second, so old and new replicas of every role run side by side
      // (an old ingress beside a new orchestrator, an old dispatcher beside a new one) while replies stream.
      await this.replaceEach(BY_REPLICA);
      return;
    }
    if (fault === 'rolling') {
      // A rolling restart under load, as a deployment does it: each replica drains and is replaced.
      await this.replaceEach(BY_ROLE);
      return;
    }
    if (fault === 'nats' || fault === 'redis') {
      const dep = fault === 'redis' ? ('masterName' in this.redis ? undefined : this.redis) : 'nodes' in this.nats ? undefined : this.nats;
      if (!dep) throw new Error(fault === 'redis' ? 'on a Sentinel rig, use the redis-sentinel fault' : 'on a NATS cluster rig, use the nats-node fault');
      await dep.kill();
      await delay(o.outageMs);
      await dep.start();
      return;
    }
    if (fault === 'nats-node') throw new Error('the nats-node fault is injected by killNode');
    if (fault === 'redis-sentinel') throw new Error('the redis-sentinel fault is injected by failOverRedis');
    const victim = `${fault}-${1 + Math.floor(Math.random() * REPLICAS)}`;
    await this.sys.services.kill(victim, 'SIGKILL');
    await this.sys.services.start(fault, this.roleEnv[fault] ?? {}, victim);
  }
}
