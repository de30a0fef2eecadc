import { Module, type DynamicModule } from '@nestjs/common';
import { QueryHandler } from './query.handler.js';
import { BotPipelines } from '@conveyor/service-kit';

@Module({})
export class OrchestratorModule {
  static register(): DynamicModule {
    return { module: OrchestratorModule, providers: [QueryHandler, BotPipelines], exports: [QueryHandler] };
  }
}
