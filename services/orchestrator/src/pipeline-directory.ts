import { Inject, Injectable } from '@nestjs/common';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { withPipelineDefaults } from '@conveyor/pipeline';

export interface BotPipeline {
  botId: string;
  enabled: boolean;
  pipelineId: string;
  stages: string[];
  config: ReturnType<typeof withPipelineDefaults>;
}

const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

/** A bot's pipeline with LangBot's defaults applied, cached briefly. */
@Injectable()
export class PipelineDirectory {
  private readonly cache = new Map<string, { value: BotPipeline | null; expires: number }>();

  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  async forBot(botId: string): Promise<BotPipeline | null> {
    const hit = this.cache.get(botId);
    if (hit && hit.expires > Date.now()) return hit.value;
    const bot = await this.infra.prisma.bot.findUnique({ where: { id: botId }, include: { pipeline: true } });
    const value: BotPipeline | null = bot && {
      botId: bot.id,
      enabled: bot.enabled,
      pipelineId: bot.pipelineId,
      stages: bot.pipeline.stages as string[],
      config: withPipelineDefaults(bot.pipeline.config as never),
    };
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(botId, { value, expires: Date.now() + TTL_MS });
    return value;
  }
}
