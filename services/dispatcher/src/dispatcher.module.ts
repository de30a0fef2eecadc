import { Module, type DynamicModule } from '@nestjs/common';
import { EventHandler } from './event.handler.js';
import { HttpBotOutbound } from './http-bot.outbound.js';
import { DelivererProvider } from './outbound/deliverer.provider.js';
import { PipelineDirectory } from './pipeline-directory.js';

@Module({})
export class DispatcherModule {
  static register(): DynamicModule {
    return { module: DispatcherModule, providers: [EventHandler, HttpBotOutbound, PipelineDirectory, DelivererProvider] };
  }
}
