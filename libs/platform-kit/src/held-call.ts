import { context, propagation } from '@opentelemetry/api';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { redisKeys, type MessageChain, type MessageComponent, type RedisKeys, type ReplySessionKey, type Topology } from '@conveyor/contracts';
import { loadScripts, type RedisClient } from '@conveyor/redis-scripts';
import type { HttpAnswer } from './inbound.js';
import type { PlatformLogger } from './outbound.js';

const scripts = loadScripts(new URL('../lua/', import.meta.url), ['held-call-release'] as const);

/** How long a dispatcher waits for the holding ingress to take a part before it sends it the platform's other way. */
const HAND_OVER_TIMEOUT_MS = 5_000;

/**
 * Webhook calls an ingress replica holds open for their reply (HTTP-bot `/sync`, a WeChat Official
 * Account's passive reply) across replicas: the holding replica registers the call's key in Redis
 * (`SET NX`, so a second call for the key is told another already waits) with its instance id; the
 * dispatcher replica sending a part for that key finds the registration and hands the part to that
 * ingress over core NATS request/reply (subject `topology.subjects.syncReply(instance)`), trace
 * context in the headers. An unanswered request (the ingress died, or already answered) leaves the
 * part to the platform's other way out (a callback, an API call).
 */
export class SyncRegistrations {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.keys = redisKeys(prefix);
  }

  /**
   * Registers `instance` as holding the call; false when another call for the key already waits.
   * `replySession`: the reply session whose parts the call takes (an HTTP-bot `/sync`), marked for as
   * long as the call may wait, so a dispatcher taking the session's parts knows to look here.
   */
  async claim(botId: string, callKey: string, instance: string, ttlMs: number, replySession?: ReplySessionKey): Promise<boolean> {
    // Both before the message is published, so before any of its parts is taken; sent together (a
    // mark left by a refused claim only makes the session's parts look, as every part did before).
    const [claimed] = await Promise.all([
      this.redis.set(this.keys.syncWaiter(botId, callKey), instance, 'PX', ttlMs, 'NX'),
      replySession ? this.redis.set(this.keys.replyHeldCallMark(replySession), instance, 'PX', ttlMs) : undefined,
    ]);
    return claimed === 'OK';
  }

  /** Removes the registration if `instance` still holds it. */
  async release(botId: string, callKey: string, instance: string): Promise<void> {
    await releaseIfHeld(this.redis, this.keys.syncWaiter(botId, callKey), instance);
  }

  /** The ingress instance holding the call, if any. */
  holder(botId: string, callKey: string): Promise<string | null> {
    return this.redis.get(this.keys.syncWaiter(botId, callKey));
  }
}

/** Deletes `key` if it still holds `holder` (a registration, a lock token); false when someone else has it. */
export async function releaseIfHeld(redis: RedisClient, key: string, holder: string): Promise<boolean> {
  return (await scripts['held-call-release'].run(redis, [key], [holder])) === 1;
}

/** One reply part handed to the ingress holding the call. */
export interface SyncPart {
  botId: string;
  /** The held call's key: the HTTP-bot session id, or what the platform keys its held calls by. */
  sessionId: string;
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
  sequence: number;
}

export interface SyncAck {
  taken: boolean;
}

export interface HandOverDeps {
  redis: RedisClient;
  prefix: string;
  topology: Topology;
  nc?: NatsConnection;
  logger?: PlatformLogger;
}

/**
 * Hands a reply part to the ingress holding the call of `part.sessionId`, if one does: true once
 * that ingress took it (the part then goes out in the call's answer), false when there is no such
 * call, it is already answered or its replica does not answer (the caller sends the part its other way).
 */
export async function handToHeldCall(deps: HandOverDeps, part: SyncPart): Promise<boolean> {
  if (!deps.nc) return false;
  // Without Redis no held call can be found; the platform's other way is its default route.
  const instance = await new SyncRegistrations(deps.redis, deps.prefix).holder(part.botId, part.sessionId).catch(() => null);
  if (!instance) return false;
  const h = natsHeaders();
  propagation.inject(context.active(), h, { set: (c, k, v) => c.set(k, v) });
  try {
    const res = await deps.nc.request(deps.topology.subjects.syncReply(instance), JSON.stringify(part), { timeout: HAND_OVER_TIMEOUT_MS, headers: h });
    return (res.json() as SyncAck).taken === true;
  } catch (err) {
    // No responder (that ingress is gone) or no answer. Say so, since a misconfigured broker (a
    // permission fault) shows up only as held calls that never get their reply.
    deps.logger?.warn({ err, botId: part.botId, callKey: part.sessionId, instance }, 'reply part not handed to the held call; sending it the platform\'s other way');
    return false;
  }
}

/**
 * A webhook call the ingress holds open while the pipeline runs, so the reply can be the call's own
 * answer (a WeChat Official Account's passive reply): the ingress registers `key` before it
 * publishes, waits up to `waitMs` for the reply's final part, then answers with `answer(parts)`, or
 * with `timeout` when nothing came (the reply then goes out through the platform's API).
 */
export interface ReplyHold {
  /** What the adapter hands parts over by (see `handToHeldCall`); unique per bot among waiting calls. */
  key: string;
  waitMs: number;
  answer(parts: readonly MessageComponent[]): HttpAnswer;
  timeout: HttpAnswer;
}
