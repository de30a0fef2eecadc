import type { INestApplication } from '@nestjs/common';
import { IngestJob } from '@conveyor/contracts';
import { ingestDocument, OpenAIClientPool } from '@conveyor/agent';
import { KnowledgeStore } from '@conveyor/persistence';
import { startRoleConsumer } from '@conveyor/service-kit';
import { ModelDirectory } from './model-directory.js';
import type { RunnerInfra } from './env.js';

/** Pending documents one sweep publishes jobs for; the next sweep takes the rest. */
const SWEEP_BATCH = 100;

/**
 * Knowledge base ingestion on the runner (it holds the embedding models' keys): the `ingester`
 * consumer of the ingest stream, and a sweep that publishes the job of every document still pending
 * (documents added by setup, or whose publish was lost). The job's de-duplication id is the document
 * and revision, so replicas sweeping at once publish it once.
 */
export async function startIngestConsumer(app: INestApplication, infra: RunnerInfra): Promise<() => Promise<void>> {
  const { env } = infra;
  const store = new KnowledgeStore(infra.db);
  const models = app.get(ModelDirectory);
  const pool = new OpenAIClientPool(16);
  const spec = infra.topology.consumers.ingest;
  const stopConsumer = await startRoleConsumer(infra, {
    role: 'ingest',
    schema: IngestJob,
    concurrency: env.INGEST_CONCURRENCY,
    handler: async (job, ctx) => {
      try {
        await ingestDocument(job, { store, model: (id) => models.find(id), pool, logger: infra.logger, signal: ctx.signal });
      } catch (err) {
        // The last delivery: the document shows why instead of staying `processing` for good.
        if (!ctx.signal.aborted && ctx.deliveryCount >= spec.maxDeliver) {
          await store.fail(job.documentId, job.revision, `ingestion failed on its last delivery (${ctx.deliveryCount} of ${spec.maxDeliver}): ${(err as Error).message}`).catch(() => undefined);
        }
        throw err;
      }
    },
  });
  let sweeping = false;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      for (const doc of await store.pending(SWEEP_BATCH)) {
        await infra.publisher.publish(infra.topology.subjects.ingest(doc.knowledgeBaseId), IngestJob, { v: 1, documentId: doc.id, revision: doc.revision }, { msgId: `ingest:${doc.id}:${doc.revision}` });
      }
    } catch (err) {
      infra.logger.warn({ err: (err as Error).message }, 'knowledge sweep failed; the next one tries again');
    } finally {
      sweeping = false;
    }
  };
  void sweep();
  const timer = setInterval(() => void sweep(), env.KNOWLEDGE_SWEEP_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await stopConsumer();
  };
}
