import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { ConsumerSpec, StreamSpec } from '@conveyor/contracts';
import { isBrokerUnavailable, isPermissionViolation, isReplicaPlacementError, StreamNotProvisionedError } from './errors.js';
import { silentLogger, type BusLogger } from './logger.js';

/** The stream fields Conveyor manages; everything else keeps the server's default (or an operator's change). */
export type ManagedStreamConfig = Pick<
  StreamConfig,
  'name' | 'subjects' | 'retention' | 'storage' | 'max_age' | 'duplicate_window' | 'max_bytes' | 'max_msg_size' | 'discard' | 'num_replicas'
>;

export interface ProvisionOptions {
  /**
   * How many JetStream servers keep a copy of each stream (NATS_STREAM_REPLICAS): 1 on a single
   * server; 3 on a cluster of three or more, so a stream survives losing a node. Consumers inherit
   * their stream's. Default 1.
   */
  replicas?: number;
  logger?: BusLogger;
}

/** The consumer fields Conveyor manages. */
export type ManagedConsumerConfig = Pick<
  ConsumerConfig,
  'durable_name' | 'ack_policy' | 'deliver_policy' | 'replay_policy' | 'ack_wait' | 'max_deliver' | 'max_ack_pending' | 'filter_subject'
>;

const RETENTION = {
  workqueue: RetentionPolicy.Workqueue,
  limits: RetentionPolicy.Limits,
  interest: RetentionPolicy.Interest,
} as const;

/**
 * Discard policy: a full work queue (workqueue or interest retention) holds work that was accepted and
 * not yet done, so it refuses new messages (`new`): the producer gets an error it can turn into an
 * overload response, instead of the stream silently dropping the oldest accepted query (`old`).
 * A limits stream (dead letters) is a log, where dropping the oldest entry is the right way to stay bounded.
 * `replicas` applies to every stream alike: each is on the message path or keeps what the path gave up on.
 */
export function streamConfigFor(spec: StreamSpec, replicas = 1): ManagedStreamConfig {
  return {
    name: spec.name,
    subjects: [...spec.subjects],
    retention: RETENTION[spec.retention],
    storage: StorageType.File,
    max_age: nanos(spec.maxAgeMs),
    duplicate_window: nanos(spec.duplicateWindowMs),
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxMsgSize,
    discard: spec.retention === 'limits' ? DiscardPolicy.Old : DiscardPolicy.New,
    num_replicas: replicas,
  };
}

/** A durable pull consumer with explicit acks (no deliver_subject: pull). */
export function consumerConfigFor(spec: ConsumerSpec): ManagedConsumerConfig {
  return {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    replay_policy: ReplayPolicy.Instant,
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: spec.maxDeliver,
    max_ack_pending: spec.maxAckPending,
    filter_subject: spec.filterSubject,
  };
}

function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

function sameSet(a: readonly string[] | undefined, b: readonly string[]): boolean {
  const sa = new Set(a ?? []);
  return sa.size === new Set(b).size && b.every((x) => sa.has(x));
}

/** Names of managed fields whose live value differs from the wanted one. */
export function streamDrift(live: Partial<StreamConfig>, want: ManagedStreamConfig): string[] {
  const drift: string[] = [];
  if (!sameSet(live.subjects, want.subjects)) drift.push('subjects');
  for (const k of ['retention', 'storage', 'max_age', 'duplicate_window', 'max_bytes', 'max_msg_size', 'discard'] as const) {
    if (live[k] !== want[k]) drift.push(k);
  }
  // A stream created before replicas were managed reports the server's default, 1.
  if ((live.num_replicas || 1) !== want.num_replicas) drift.push('num_replicas');
  return drift;
}

export function consumerDrift(live: Partial<ConsumerConfig>, want: ManagedConsumerConfig): string[] {
  const drift: string[] = [];
  for (const k of ['ack_policy', 'ack_wait', 'max_deliver', 'max_ack_pending', 'filter_subject'] as const) {
    if ((live[k] ?? undefined) !== want[k]) drift.push(k);
  }
  return drift;
}

function tooFewServers(spec: StreamSpec, replicas: number, err?: unknown): Error {
  return new Error(
    `stream ${spec.name}: NATS_STREAM_REPLICAS is ${replicas}, but JetStream cannot place ${replicas} replicas ` +
      `(it needs a cluster with at least ${replicas} JetStream servers; use 1 on a single server)` +
      (err ? `: ${(err as Error).message}` : ''),
    err ? { cause: err } : undefined,
  );
}

async function ensureStream(jsm: JetStreamManager, spec: StreamSpec, replicas: number, logger: BusLogger): Promise<StreamInfo> {
  const want = streamConfigFor(spec, replicas);
  // Two attempts: replicas starting together may race to create the same stream.
  for (let attempt = 0; ; attempt++) {
    let live: StreamInfo | undefined;
    try {
      live = await jsm.streams.info(spec.name);
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
    }
    if (!live) {
      try {
        const info = await jsm.streams.add(want);
        logger.info({ stream: spec.name, replicas }, 'stream created');
        return info;
      } catch (err) {
        if (isReplicaPlacementError(err)) throw tooFewServers(spec, replicas, err);
        if (isPermissionViolation(err)) throw new StreamNotProvisionedError(spec.name, [], { cause: err });
        if (attempt === 0) continue; // someone else created it meanwhile: compare and update
        throw err;
      }
    }
    const drift = streamDrift(live.config, want);
    if (drift.length === 0) return live;
    // A server outside a cluster takes a higher replica count in an update without placing any replica.
    if (drift.includes('num_replicas') && replicas > 1 && !live.cluster) throw tooFewServers(spec, replicas);
    try {
      // The client merges this into the live config, so fields an operator set are kept.
      const { name: _name, ...managed } = want;
      const info = await jsm.streams.update(spec.name, managed);
      logger.info({ stream: spec.name, changed: drift }, 'stream updated');
      return info;
    } catch (err) {
      if (isReplicaPlacementError(err)) throw tooFewServers(spec, replicas, err);
      if (isPermissionViolation(err)) throw new StreamNotProvisionedError(spec.name, drift, { cause: err });
      throw new Error(
        `stream ${spec.name} differs from its spec in ${drift.join(', ')} and the server refused the update ` +
          `(retention and storage cannot change in place; migrate the stream): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
}

async function ensureConsumer(jsm: JetStreamManager, spec: ConsumerSpec, logger: BusLogger): Promise<ConsumerInfo> {
  const want = consumerConfigFor(spec);
  for (let attempt = 0; ; attempt++) {
    let live: ConsumerInfo | undefined;
    try {
      live = await jsm.consumers.info(spec.stream, spec.durable);
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
    }
    if (!live) {
      try {
        const info = await jsm.consumers.add(spec.stream, want);
        logger.info({ stream: spec.stream, durable: spec.durable }, 'consumer created');
        return info;
      } catch (err) {
        if (attempt === 0) continue;
        throw err;
      }
    }
    const drift = consumerDrift(live.config, want);
    if (drift.length === 0) return live;
    try {
      const { durable_name: _durable, ack_policy: _ack, deliver_policy: _deliver, replay_policy: _replay, ...updatable } = want;
      const info = await jsm.consumers.update(spec.stream, spec.durable, updatable);
      logger.info({ stream: spec.stream, durable: spec.durable, changed: drift }, 'consumer updated');
      return info;
    } catch (err) {
      throw new Error(
        `consumer ${spec.stream}/${spec.durable} differs from its spec in ${drift.join(', ')} and the server ` +
          `refused the update (delete and recreate it): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
}

/**
 * Creates missing streams and brings existing ones to their spec and replica count (NATS changes a
 * clustered stream's replicas in place, keeping its data). Idempotent; safe from many replicas.
 */
export async function ensureStreams(
  jsm: JetStreamManager,
  specs: readonly StreamSpec[],
  options: ProvisionOptions = {},
): Promise<StreamInfo[]> {
  const replicas = options.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw new RangeError(`stream replicas must be an integer from 1 to 5, not ${replicas}`);
  const out: StreamInfo[] = [];
  for (const spec of specs) out.push(await ensureStream(jsm, spec, replicas, options.logger ?? silentLogger));
  return out;
}

export interface AwaitStreamsOptions extends ProvisionOptions {
  /** How long to wait for another identity to provision what this one may not. */
  timeoutMs: number;
}

/**
 * `ensureStreams` at a service's start, waiting for what is not there yet: JetStream not answering
 * (a cluster still electing its leaders, a server starting beside the service) or, for a user that
 * may not create or update streams, a stream the admin service has not provisioned yet
 * (StreamNotProvisionedError). It checks again with a growing pause, logging each reason once, until
 * it succeeds or `timeoutMs` is spent (then the last error is thrown).
 */
export async function awaitStreams(jsm: JetStreamManager, specs: readonly StreamSpec[], options: AwaitStreamsOptions): Promise<StreamInfo[]> {
  const logger = options.logger ?? silentLogger;
  const started = Date.now();
  const reported = new Set<string>();
  const within = `waiting up to ${Math.round(options.timeoutMs / 1000)} s`;
  for (let pauseMs = 500; ; pauseMs = Math.min(pauseMs * 2, 5_000)) {
    try {
      return await ensureStreams(jsm, specs, options);
    } catch (err) {
      const notProvisioned = err instanceof StreamNotProvisionedError;
      if ((!notProvisioned && !isBrokerUnavailable(err)) || Date.now() - started + pauseMs > options.timeoutMs) throw err;
      const reason = notProvisioned ? `stream ${err.stream}` : 'jetstream';
      if (!reported.has(reason)) {
        reported.add(reason);
        if (notProvisioned) logger.warn({ stream: err.stream, drift: err.drift }, `${err.message}; ${within}`);
        else logger.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, `JetStream is not answering yet; ${within}`);
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

/** Creates missing durable pull consumers and brings existing ones to their spec. Streams must exist. */
export async function ensureConsumers(
  jsm: JetStreamManager,
  specs: readonly ConsumerSpec[],
  logger: BusLogger = silentLogger,
): Promise<ConsumerInfo[]> {
  const out: ConsumerInfo[] = [];
  for (const spec of specs) out.push(await ensureConsumer(jsm, spec, logger));
  return out;
}
