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
    // Keyed by bot: a bot's change drops its entry; a pipeline's may concern any bot, so drops all.
    infra.configCaches.register((event) => {
      if (event?.kind === 'bot') this.invalidateBot(event.id);
      else if (!event || event.kind === 'pipeline') this.clear();
    });
  }
}
