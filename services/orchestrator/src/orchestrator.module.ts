import { Module, type DynamicModule } from '@nestjs/common';
import { QueryConsumer } from './query.consumer.js';
import { QueryHandler } from './query.handler.js';
import { PluginRuntime } from '@conveyor/service-kit';
import { Takeovers } from './takeovers.provider.js';

@Module({})
export class OrchestratorModule {
  static register(): DynamicModule {
    return { module: OrchestratorModule, controllers: [QueryConsumer], providers: [QueryHandler, PluginRuntime, Takeovers], exports: [QueryHandler] };
  }
}
