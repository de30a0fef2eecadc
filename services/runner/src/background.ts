import type { INestApplication } from '@nestjs/common';
import { startKnowledgeSweep } from './ingest.consumer.js';
import { startMaxDeliveriesConsumer } from './max-deliveries.js';
import { McpRegistry } from './mcp-registry.js';
import { RunHandler } from './run.handler.js';
import type { RunnerInfra } from './env.js';

/**
 * What the runner runs beside its two role consumers: the max-deliveries advisories (runs every
 * runner died on) and the knowledge sweep. The returned stop runs after the consumers drained, so the
 * MCP sessions and the run handler close last.
 */
export async function startRunnerBackground(app: INestApplication, infra: RunnerInfra): Promise<() => Promise<void>> {
  const handler = app.get(RunHandler);
  const advisories = await startMaxDeliveriesConsumer(infra, infra.topology.consumers.runner, handler);
  const stopSweep = startKnowledgeSweep(infra);
  return async () => {
    stopSweep();
    await advisories.stop({ timeoutMs: 2_000, abortGraceMs: 500 });
    await app.get(McpRegistry).close();
    await handler.close();
  };
}
