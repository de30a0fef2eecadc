import { Controller, Inject } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { ingestDocument, OpenAIClientPool } from '@conveyor/agent';
import type { ConsumeContext } from '@conveyor/bus';
import { IngestJob } from '@conveyor/contracts';
import { KnowledgeStore } from '@conveyor/persistence';
import { INFRA, RoleHandler } from '@conveyor/service-kit';
import { ModelDirectory } from './model-directory.js';
import type { RunnerInfra } from './env.js';

/** Pending documents one sweep publishes jobs for; the next sweep takes the rest. */
const SWEEP_BATCH = 100;

/**
 * Knowledge base ingestion on the runner (it holds the embedding models' keys): the `ingest`
 * consumer of the ingest stream (settings in main.ts).
 */
@Controller()
export class IngestConsumer {
  private readonly store: KnowledgeStore;
  private readonly pool = new OpenAIClientPool(16);

  constructor(@Inject(INFRA) private readonly infra: RunnerInfra, private readonly models: ModelDirectory) {
    this.store = new KnowledgeStore(infra.db);
  }

  @RoleHandler('ingest')
  async handle(@Payload() job: IngestJob, @Ctx() ctx: ConsumeContext): Promise<void> {
    const { maxDeliver } = this.infra.topology.consumers.ingest;
    try {
      await ingestDocument(job, { store: this.store, model: (id) => this.models.find(id), pool: this.pool, logger: this.infra.logger, signal: ctx.signal });
    } catch (err) {
      // The last delivery: the document shows why instead of staying `processing` for good.
      if (!ctx.signal.aborted && ctx.deliveryCount >= maxDeliver) {
        await this.store.fail(job.documentId, job.revision, `ingestion failed on its last delivery (${ctx.deliveryCount} of ${maxDeliver}): ${(err as Error).message}`).catch(() => undefined);
      }
      throw err;
    }
  }
}

/**
 * Publishes the job of every document still pending (documents added by setup, or whose publish was
 * lost), and computes the search terms of a batch of chunks written before full-text search existed,
 * now and every KNOWLEDGE_SWEEP_MS. The job's de-duplication id is the document and revision,
 * so replicas sweeping at once publish it once. Returns the stop.
 */
export function startKnowledgeSweep(infra: RunnerInfra): () => void {
  const store = new KnowledgeStore(infra.db);
  let sweeping = false;
  // Chunks written since full-text search existed carry their terms: once a sweep finds none without
  // them, the backfill is over for good and later sweeps no longer look.
  let termsBackfilled = false;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      for (const doc of await store.pending(SWEEP_BATCH)) {
        await infra.publisher.publish(infra.topology.subjects.ingest(doc.knowledgeBaseId), IngestJob, { v: 1, documentId: doc.id, revision: doc.revision }, { msgId: `ingest:${doc.id}:${doc.revision}` });
      }
      if (!termsBackfilled) {
        const filled = await store.fillMissingTerms();
        if (filled > 0) infra.logger.info({ chunks: filled }, 'computed the search terms of chunks written before full-text search');
        else termsBackfilled = true;
      }
    } catch (err) {
      infra.logger.warn({ err: (err as Error).message }, 'knowledge sweep failed; the next one tries again');
    } finally {
      sweeping = false;
    }
  };
  void sweep();
  const timer = setInterval(() => void sweep(), infra.env.KNOWLEDGE_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}
