import { Module, type DynamicModule } from '@nestjs/common';
import { QueryHandler } from './query.handler.js';
import { PipelineDirectory } from './pipeline-directory.js';

@Module({})
export class OrchestratorModule {
  static register(): DynamicModule {
    return { module: OrchestratorModule, providers: [QueryHandler, PipelineDirectory], exports: [QueryHandler] };
  }
}
