import { Inject, Injectable } from '@nestjs/common';
import { PipelineDirectory } from '@conveyor/pipeline';
import { findBotWithPipeline } from '@conveyor/persistence';
import { INFRA } from './infra.module.js';
import type { Infra } from './infra.js';

/** The pipeline directory over this service's Prisma client (the orchestrator and the dispatcher each hold one). */
@Injectable()
export class BotPipelines extends PipelineDirectory {
  constructor(@Inject(INFRA) infra: Infra) {
    super(
      (botId) => findBotWithPipeline(infra.prisma, botId),
      (botId, pipelineId, issues) => infra.logger.error({ botId, pipelineId, issues }, 'pipeline rejected: invalid config'),
    );
  }
}
