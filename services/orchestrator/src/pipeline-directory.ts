import { Inject, Injectable } from '@nestjs/common';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { PipelineDirectory } from '@conveyor/pipeline';

/** The shared pipeline directory over this service's Prisma client. */
@Injectable()
export class BotPipelines extends PipelineDirectory {
  constructor(@Inject(INFRA) infra: Infra) {
    super(
      (botId) => infra.prisma.bot.findUnique({ where: { id: botId }, include: { pipeline: true } }),
      (botId, pipelineId, issues) => infra.logger.error({ botId, pipelineId, issues }, 'pipeline rejected: invalid config'),
    );
  }
}
