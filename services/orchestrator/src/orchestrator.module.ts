import { Module, type DynamicModule } from '@nestjs/common';
import { QueryHandler } from './query.handler.js';
import { PluginRuntime } from '@conveyor/service-kit';

@Module({})
export class OrchestratorModule {
  static register(): DynamicModule {
    return { module: OrchestratorModule, providers: [QueryHandler, PluginRuntime], exports: [QueryHandler] };
  }
}
