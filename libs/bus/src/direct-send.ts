import { context, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { headers as natsHeaders, NoRespondersError, TimeoutError, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { DirectSendReply, DirectSendRequest, HEADERS, topology } from '@conveyor/contracts';
import { busTracer, natsHeaderGetter, natsHeaderSetter } from './otel.js';
import { silentLogger, type BusLogger } from './logger.js';
import { describeIssues } from './validate.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** How long a direct send may take: a platform's API answers within it or the send counts as failed. */
export const DIRECT_SEND_TIMEOUT_MS = 30_000;

/**
 * Asks a dispatcher replica to send a message to a chat (the one publisher of `DirectSendRequest`): a
 * CLIENT span whose context travels in the request's headers. No dispatcher answering is a `failed`
 * reply, not a throw.
 */
export async function requestDirectSend(nc: NatsConnection, prefix: string, request: DirectSendRequest, timeoutMs = DIRECT_SEND_TIMEOUT_MS): Promise<DirectSendReply> {
  const subject = topology(prefix).subjects.directSend;
  return busTracer().startActiveSpan('direct-send', { kind: SpanKind.CLIENT, attributes: { 'messaging.destination.name': subject, 'conveyor.bot.id': request.botId, 'conveyor.direct_send.origin': request.origin } }, async (span) => {
    try {
      const headers = natsHeaders();
      headers.set(HEADERS.schema, 'DirectSendRequest/1');
      propagation.inject(context.active(), headers, natsHeaderSetter);
      let answer: DirectSendReply;
      try {
        const msg = await nc.request(subject, encoder.encode(JSON.stringify(DirectSendRequest.parse(request))), { timeout: timeoutMs, headers });
        answer = DirectSendReply.parse(JSON.parse(decoder.decode(msg.data)));
      } catch (err) {
        const cause = err instanceof NoRespondersError || (err as { cause?: unknown })?.cause instanceof NoRespondersError ? 'no dispatcher is running' : err instanceof TimeoutError ? `no dispatcher answered within ${timeoutMs} ms` : (err as Error).message;
        answer = { v: 1, ok: false, error: { code: 'failed', message: cause } };
      }
      if (!answer.ok) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: answer.error.message });
        span.setAttribute('error.type', answer.error.code);
      }
      return answer;
    } finally {
      span.end();
    }
  });
}

/**
 * The dispatcher's side: answers `DirectSendRequest`s in the queue group `direct-send`, each in a
 * SERVER span continuing the sender's trace. A request that does not parse is answered `invalid`.
 */
export async function serveDirectSends(nc: NatsConnection, prefix: string, send: (request: DirectSendRequest) => Promise<DirectSendReply>, logger: BusLogger = silentLogger): Promise<Subscription> {
  const subject = topology(prefix).subjects.directSend;
  const sub = nc.subscribe(subject, {
    queue: 'direct-send',
    callback: (err, msg) => {
      if (err || !msg.reply) return;
      const parent = propagation.extract(context.active(), msg.headers, natsHeaderGetter);
      void context.with(parent, () => busTracer().startActiveSpan('direct-send', { kind: SpanKind.SERVER, attributes: { 'messaging.destination.name': subject } }, async (span) => {
        let answer: DirectSendReply;
        try {
          let body: unknown;
          try {
            body = JSON.parse(decoder.decode(msg.data));
          } catch {
            body = undefined;
          }
          const parsed = DirectSendRequest.safeParse(body);
          if (!parsed.success) {
            answer = { v: 1, ok: false, error: { code: 'invalid', message: body === undefined ? 'the request is not JSON' : describeIssues(parsed.error) } };
          } else {
            span.setAttributes({ 'conveyor.bot.id': parsed.data.botId, 'conveyor.direct_send.origin': parsed.data.origin });
            answer = await send(parsed.data);
          }
        } catch (e) {
          logger.error({ err: (e as Error).message }, 'direct send failed');
          answer = { v: 1, ok: false, error: { code: 'failed', message: 'the dispatcher could not send it; it logged why' } };
        }
        if (!answer.ok) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: answer.error.message });
          span.setAttribute('error.type', answer.error.code);
        }
        msg.respond(encoder.encode(JSON.stringify(answer)));
        span.end();
      }));
    },
  });
  await nc.flush();
  return sub;
}
