import { Inject, Injectable } from '@nestjs/common';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { describeIssues, loadPipeline, type PipelineDefinition } from '@conveyor/pipeline';

const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

/** The validated pipeline of a bot, cached briefly (events of one reply arrive in bursts). */
@Injectable()
export class PipelineDirectory {
  private readonly cache = new Map<string, { value: PipelineDefinition | string; expires: number }>();

  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  /** The pipeline, or why there is none. */
  async forBot(botId: string): Promise<PipelineDefinition | string> {
    const hit = this.cache.get(botId);
    if (hit && hit.expires > Date.now()) return hit.value;
    const bot = await this.infra.prisma.bot.findUnique({ where: { id: botId }, include: { pipeline: true } });
    let value: PipelineDefinition | string = `bot ${botId} not found`;
    if (bot) {
      const loaded = loadPipeline(bot.pipelineId, bot.pipeline.stages, bot.pipeline.config);
      value = loaded.ok ? loaded.pipeline : `pipeline ${bot.pipelineId} rejected: ${describeIssues(loaded.issues)}`;
    }
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(botId, { value, expires: Date.now() + TTL_MS });
    return value;
  }
}
