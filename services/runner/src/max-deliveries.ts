import { MaxDeliveriesAdvisory, RunRequest, type ConsumerSpec } from '@conveyor/contracts';
import { ensureConsumers, startConsumer, type ConsumerHandle } from '@conveyor/bus';
import { isDependencyOutage, type Infra } from '@conveyor/service-kit';
import { RunAttempts } from '@conveyor/message-state';
import { userFacingError } from '@conveyor/agent';
import type { RunHandler } from './run.handler.js';

/**
 * A run whose every delivery died with its runner (killed, OOM) is never handled again, and no
 * handler is left to tell the user. JetStream announces it with a MAX_DELIVERIES advisory, which the
 * run-advisories stream keeps until a runner replica takes it (also one started later): that replica
 * sends the failure hint, records why, and removes the run.
 */
export async function startMaxDeliveriesConsumer(infra: Infra, runs: ConsumerSpec, handler: RunHandler): Promise<ConsumerHandle> {
  const spec = infra.topology.consumers.runAdvisories;
  await ensureConsumers(infra.jsm, [spec]);
  const attempts = new RunAttempts(infra.redis, infra.topology.prefix);
  return startConsumer({
    js: infra.js,
    spec,
    schema: MaxDeliveriesAdvisory,
    source: 'runner-advisories',
    deadLetterSubject: infra.topology.subjects.deadLetter('runner-advisories'),
    publisherForDeadLetters: infra.publisher,
    logger: infra.logger,
    isOutage: isDependencyOutage,
    handler: async (advisory) => {
      // null when the run is no longer stored (it finished or was removed); any other failure (a
      // timeout, a permission fault) is an error, retried and in the end dead-lettered, never taken
      // for "already finished", which would drop the user's failure notice without a trace.
      const stored = await infra.jsm.streams.getMessage(runs.stream, { seq: advisory.stream_seq });
      if (!stored) return;
      const parsed = RunRequest.safeParse(stored.json());
      if (!parsed.success) return; // Invalid runs were dead-lettered at their first delivery.
      const run = parsed.data;
      const error = `run abandoned after ${advisory.deliveries} deliveries (max ${runs.maxDeliver}): every runner that took it stopped before finishing`;
      infra.logger.error({ queryId: run.queryId, deliveries: advisory.deliveries }, error);
      // A fresh attempt number, above every attempt that streamed, so this ending replaces any partial reply.
      const events = handler.events(run, await attempts.next(run.queryId));
      await events.emit({ kind: 'error', error, userText: userFacingError(run, error) });
      await events.emit({ kind: 'done' });
      infra.queryLog.failed(run.queryId, error);
      await infra.jsm.streams.deleteMessage(runs.stream, advisory.stream_seq).catch(() => undefined);
    },
  });
}
