import type { ConsumerSpec } from '@conveyor/contracts';
import { RunRequest } from '@conveyor/contracts';
import { RunAttempts, type Infra } from '@conveyor/service-kit';
import { userFacingError } from '@conveyor/agent';
import type { RunHandler } from './run.handler.js';

/**
 * A run whose every delivery died with its runner (killed, OOM) is never handled again, and no
 * handler is left to tell the user. JetStream announces it with a MAX_DELIVERIES advisory; one
 * replica (queue group) picks it up, sends the failure hint, records why, and removes the run.
 */
export async function watchMaxDeliveries(infra: Infra, spec: ConsumerSpec, handler: RunHandler): Promise<() => void> {
  const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${spec.stream}.${spec.durable}`;
  const queryLog = infra.queryLog;
  const attempts = new RunAttempts(infra.redis, infra.topology.prefix);
  const sub = infra.nc.subscribe(subject, {
    queue: `${spec.durable}-max-deliveries`,
    callback: (err, msg) => {
      if (err) return;
      void (async () => {
        const advisory = msg.json<{ stream_seq: number; deliveries: number }>();
        const stored = await infra.jsm.streams.getMessage(spec.stream, { seq: advisory.stream_seq }).catch(() => null);
        if (!stored) return; // Already finished or removed.
        const parsed = RunRequest.safeParse(stored.json());
        if (!parsed.success) return; // Invalid runs were dead-lettered at the first delivery.
        const run = parsed.data;
        const error = `run abandoned after ${advisory.deliveries} deliveries (max ${spec.maxDeliver}): every runner that took it stopped before finishing`;
        infra.logger.error({ queryId: run.queryId, deliveries: advisory.deliveries }, error);
        // A fresh attempt number, above every attempt that streamed, so this ending replaces any partial reply.
        const emit = handler.publisher(run, await attempts.next(run.queryId));
        await emit({ kind: 'error', error, userText: userFacingError(run, error) });
        await emit({ kind: 'done' });
        queryLog.failed(run.queryId, error);
        await infra.jsm.streams.deleteMessage(spec.stream, advisory.stream_seq).catch(() => undefined);
      })().catch((e: Error) => infra.logger.error({ err: e.message }, 'handling a MAX_DELIVERIES advisory failed'));
    },
  });
  // The subscription is registered on the server once the flush returns; only then may the caller pull.
  await infra.nc.flush();
  return () => sub.unsubscribe();
}
