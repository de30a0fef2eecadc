import { Module, type DynamicModule } from '@nestjs/common';
import { BotsController } from './bots.controller.js';
import { BotDirectory } from './bot-directory.js';
import { QueryPublisher } from './query-publisher.js';

@Module({})
export class IngressModule {
  static register(): DynamicModule {
    return { module: IngressModule, controllers: [BotsController], providers: [BotDirectory, QueryPublisher] };
  }
}
