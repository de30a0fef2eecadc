import { Module, type DynamicModule } from '@nestjs/common';
import { EventConsumer } from './event.consumer.js';
import { EventHandler } from './event.handler.js';
import { PlatformOutbound } from './platform.outbound.js';
import { DelivererProvider } from './outbound/deliverer.provider.js';
import { PluginRuntime } from '@conveyor/service-kit';
import { DirectSendServer } from './direct-send.server.js';

@Module({})
export class DispatcherModule {
  static register(): DynamicModule {
    return { module: DispatcherModule, controllers: [EventConsumer], providers: [EventHandler, PlatformOutbound, DelivererProvider, PluginRuntime, DirectSendServer] };
  }
}
