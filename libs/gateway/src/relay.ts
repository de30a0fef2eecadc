import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, propagation, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT } from '@opentelemetry/api';
import { headers as natsHeaders, NoRespondersError, RequestError, TimeoutError, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  GatewaySendReply,
  GatewaySendRequest,
  isPassingGatewayFailure,
  plainText,
  redisKeys,
  type GatewaySendFailure,
  type ReplyRoute,
  type Topology,
} from '@conveyor/contracts';
import { PlatformRejectedError, type DeliveryContext, type OpenConnection, type OutboundReply, type PlatformAdapter, type PlatformLogger, type SendResult } from '@conveyor/platform-kit';
import type { ConnectionLease } from './lease.js';
import type { RedisClient } from '@conveyor/redis-scripts';

const tracer = trace.getTracer('@conveyor/gateway');

const headerSetter = { set: (h: MsgHdrs, k: string, v: string) => h.set(k, v) };
const headerGetter = {
  get: (h: MsgHdrs | undefined, k: string) => h?.get(k) || undefined,
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
};

export interface GatewayRelayAdapterOptions {
  nc: NatsConnection;
  topology: Topology;
  logger: PlatformLogger;
  /** One request's wait for the owning gateway's answer. */
  requestTimeoutMs?: number;
  /** How long a part waits for a bot's connection to have an owner again (takeover, reconnection). */
  retryBudgetMs?: number;
  /**
   * The platform streams a reply in place over its connection (WeCom's AI bot): every snapshot of a
   * streamed reply goes to the gateway, marked with the reply's stream id. Otherwise a streamed reply
   * goes once, whole, with its final part.
   */
  streamSnapshots?: boolean;
}

/** One id for every snapshot of a query's reply, also when a redelivered run streams it again. */
export function relayStreamId(queryId: string): string {
  return createHash('sha256').update(queryId).digest('hex').slice(0, 32);
}

/**
 * The dispatcher's outbound adapter of a connection platform: each whole reply goes over core NATS
 * request/reply to the gateway replica that holds the bot's connection. No owner yet (a takeover in
 * progress), a stale owner or a connection being re-established answers at once, and the part is
 * tried again with a growing pause within a bounded budget; then it fails with the reason, like a
 * callback that never got through. Unless the platform streams in place over its connection
 * (`streamSnapshots`), a streamed reply is sent once, whole, with its final part.
 */
export class GatewayRelayAdapter implements PlatformAdapter {
  constructor(readonly name: string, private readonly o: GatewayRelayAdapterOptions) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const snapshot = reply.stream && this.o.streamSnapshots === true;
    if (reply.stream && !reply.isFinal && !snapshot) return { delivered: true };
    const empty = reply.message.length === 0 || (reply.message.every((c) => c.type === 'Plain') && !plainText(reply.message));
    // A final snapshot without text still ends the stream the platform shows.
    if (empty && !(snapshot && reply.isFinal)) return { delivered: true };
    const request: GatewaySendRequest = {
      v: 1,
      partId: `${ctx.queryId}:${ctx.partKey}`,
      route,
      message: reply.message,
      ...(snapshot ? { stream: { id: relayStreamId(ctx.queryId), final: reply.isFinal } } : {}),
    };
    const body = JSON.stringify(request);
    const subject = this.o.topology.subjects.gatewaySend(route.botId);
    const timeout = this.o.requestTimeoutMs ?? 10_000;
    const deadline = Date.now() + (this.o.retryBudgetMs ?? 60_000);
    let lastReason = 'no answer';
    for (let attempt = 1; attempt <= 64; attempt++) {
      if (ctx.signal?.aborted) return { delivered: false, reason: `stopped: ${lastReason}` };
      const h = natsHeaders();
      propagation.inject(context.active(), h, headerSetter);
      try {
        const res = await this.o.nc.request(subject, body, { timeout, headers: h });
        const parsed = GatewaySendReply.safeParse(safeJson(res));
        if (!parsed.success) return { delivered: false, reason: 'the gateway answered something that is no GatewaySendReply' };
        const answer = parsed.data;
        if (answer.ok) return { delivered: true };
        lastReason = `${answer.code}: ${answer.error}`;
        if (!isPassingGatewayFailure(answer.code)) return { delivered: false, reason: lastReason };
      } catch (err) {
        lastReason = isNoResponders(err) ? `no gateway replica holds the connection of bot ${route.botId}` : err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError) ? 'the owning gateway did not answer in time' : (err as Error).message;
      }
      const pause = Math.min(5_000, 250 * 2 ** (attempt - 1));
      if (Date.now() + pause > deadline) break;
      this.o.logger.warn({ botId: route.botId, queryId: ctx.queryId, attempt, reason: lastReason }, 'reply part not taken by a gateway yet; retrying');
      await sleep(pause, undefined, { signal: ctx.signal }).catch(() => undefined);
    }
    return { delivered: false, reason: `${lastReason} (gave up after the retry budget)` };
  }
}

function isNoResponders(err: unknown): boolean {
  return err instanceof NoRespondersError || (err instanceof RequestError && (err.isNoResponders() || err.cause instanceof NoRespondersError));
}

function safeJson(msg: Msg): unknown {
  try {
    return msg.json();
  } catch {
    return undefined;
  }
}


export interface GatewaySendServerOptions {
  nc: NatsConnection;
  topology: Topology;
  redis: RedisClient;
  prefix: string;
  botId: string;
  lease: ConnectionLease;
  connection: OpenConnection;
  logger: { warn(obj: object, msg: string): void };
  /** Counts each answered request by outcome (`sent`, `duplicate`, or a failure code). */
  count?: (outcome: 'sent' | 'duplicate' | GatewaySendFailure) => void;
}

/** How long a part being sent blocks a second copy of it, and how long a sent part is remembered. */
const CLAIM_MS = 15_000;
const SENT_MS = 24 * 60 * 60_000;

/**
 * The owning gateway's side of outbound sends for one bot: answers `gatewaySend(botId)` while the
 * connection is open. Each part is fenced (a replica that lost the bot answers `not_owner`), claimed
 * by its part id (a retried part already sent is answered as sent, not shown twice), then sent.
 * Subscribed in a queue group, so during the moment two replicas both listen only one takes a part.
 */
export function serveGatewaySends(o: GatewaySendServerOptions): Subscription {
  const sentKey = (partId: string) => redisKeys(o.prefix).gatewaySent(o.botId, partId);
  const answer = (msg: Msg, reply: GatewaySendReply) => {
    o.count?.(reply.ok ? (reply.duplicate ? 'duplicate' : 'sent') : reply.code);
    msg.respond(JSON.stringify(reply));
  };
  const handle = async (msg: Msg) => {
    const parent = propagation.extract(ROOT_CONTEXT, msg.headers, headerGetter);
    await tracer.startActiveSpan('gateway send', { kind: SpanKind.SERVER, attributes: { 'conveyor.bot.id': o.botId } }, parent, async (span) => {
      try {
        const parsed = GatewaySendRequest.safeParse(safeJson(msg));
        if (!parsed.success || parsed.data.route.botId !== o.botId) {
          o.logger.warn({ botId: o.botId, traceId: span.spanContext().traceId }, 'refusing a malformed gateway send request');
          return answer(msg, { v: 1, ok: false, code: 'invalid', error: parsed.success ? 'the route names another bot' : 'the request is no GatewaySendRequest' });
        }
        const req = parsed.data;
        span.setAttribute('conveyor.part_id', req.partId);
        try {
          const token = await o.lease.check();
          span.setAttribute('conveyor.gateway.fencing_token', token);
        } catch {
          return answer(msg, { v: 1, ok: false, code: 'not_owner', error: `this replica no longer holds bot ${o.botId}` });
        }
        const key = sentKey(req.partId);
        const claimed = await o.redis.set(key, 'sending', 'PX', CLAIM_MS, 'NX');
        if (claimed !== 'OK') {
          const state = await o.redis.get(key);
          if (state === 'sent') return answer(msg, { v: 1, ok: true, duplicate: true });
          return answer(msg, { v: 1, ok: false, code: 'in_progress', error: 'this part is being sent' });
        }
        // Marked sent as soon as the request is on the wire, not when the platform confirms it: a
        // replica killed while waiting for the answer leaves a part that was most likely shown, and
        // sending it again would show it twice. The cost is the rare part lost with a connection that
        // dropped right after the write.
        let marked: Promise<unknown> | undefined;
        const markSent = () => void (marked = o.redis.set(key, 'sent', 'PX', SENT_MS).catch(() => undefined));
        try {
          const sent = await o.connection.send(req.route, req.message, markSent, req.stream);
          await (marked ?? o.redis.set(key, 'sent', 'PX', SENT_MS));
          return answer(msg, { v: 1, ok: true, ...(sent.messageId !== undefined ? { messageId: sent.messageId } : {}) });
        } catch (err) {
          const rejected = err instanceof PlatformRejectedError;
          // A refused part was not shown (the platform said so); one that never left may be tried again.
          if (rejected || !marked) {
            await marked;
            await o.redis.del(key).catch(() => undefined);
          } else {
            o.logger.warn({ err, botId: o.botId, partId: req.partId, traceId: span.spanContext().traceId }, 'a reply part was written to the connection but not confirmed; counted as sent');
            return answer(msg, { v: 1, ok: true });
          }
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
          o.logger.warn({ err, botId: o.botId, partId: req.partId, traceId: span.spanContext().traceId }, rejected ? 'the platform refused a reply part' : 'a reply part could not be sent on the connection');
          return answer(msg, { v: 1, ok: false, code: rejected ? 'rejected' : 'not_connected', error: (err as Error).message });
        }
      } catch (err) {
        // Redis down: the dispatcher retries, which is right for a passing outage.
        span.recordException(err as Error);
        o.logger.warn({ err, botId: o.botId }, 'gateway send failed');
        return answer(msg, { v: 1, ok: false, code: 'not_connected', error: (err as Error).message });
      } finally {
        span.end();
      }
    });
  };
  return o.nc.subscribe(o.topology.subjects.gatewaySend(o.botId), {
    queue: 'gateway',
    callback: (err, msg) => {
      if (err) return;
      void handle(msg);
    },
  });
}
