import { Module, type DynamicModule } from '@nestjs/common';
import { QueryConsumer } from './query.consumer.js';
import { QueryHandler } from './query.handler.js';
import { PluginRuntime } from '@conveyor/service-kit';

@Module({})
export class OrchestratorModule {
  static register(): DynamicModule {
    return { module: OrchestratorModule, controllers: [QueryConsumer], providers: [QueryHandler, PluginRuntime], exports: [QueryHandler] };
  }
}
