import { Inject, Injectable } from '@nestjs/common';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { describeIssues, loadPipeline, type ConfigIssue, type PipelineDefinition } from '@conveyor/pipeline';

export type BotPipeline =
  | { botId: string; enabled: boolean; pipelineId: string; ok: true; pipeline: PipelineDefinition }
  | { botId: string; enabled: boolean; pipelineId: string; ok: false; issues: ConfigIssue[]; reason: string };

const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

/**
 * A bot's pipeline, validated, cached briefly. An invalid pipeline is cached as invalid with its
 * issues: it rejects its own messages and nothing else.
 */
@Injectable()
export class PipelineDirectory {
  private readonly cache = new Map<string, { value: BotPipeline | null; expires: number }>();

  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  async forBot(botId: string): Promise<BotPipeline | null> {
    const hit = this.cache.get(botId);
    if (hit && hit.expires > Date.now()) return hit.value;
    const bot = await this.infra.prisma.bot.findUnique({ where: { id: botId }, include: { pipeline: true } });
    let value: BotPipeline | null = null;
    if (bot) {
      const base = { botId: bot.id, enabled: bot.enabled, pipelineId: bot.pipelineId };
      const loaded = loadPipeline(bot.pipelineId, bot.pipeline.stages, bot.pipeline.config);
      value = loaded.ok ? { ...base, ok: true, pipeline: loaded.pipeline } : { ...base, ok: false, issues: loaded.issues, reason: describeIssues(loaded.issues) };
      if (!loaded.ok) this.infra.logger.error({ botId, pipelineId: bot.pipelineId, issues: loaded.issues }, 'pipeline rejected: invalid config');
    }
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(botId, { value, expires: Date.now() + TTL_MS });
    return value;
  }
}
