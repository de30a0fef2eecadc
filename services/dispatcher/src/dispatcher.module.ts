import { Module, type DynamicModule } from '@nestjs/common';
import { EventHandler } from './event.handler.js';
import { HttpBotOutbound } from './http-bot.outbound.js';

@Module({})
export class DispatcherModule {
  static register(): DynamicModule {
    return { module: DispatcherModule, providers: [EventHandler, HttpBotOutbound] };
  }
}
