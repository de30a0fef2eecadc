import { Module, type DynamicModule } from '@nestjs/common';
import { BotsController } from './bots.controller.js';
import { BotDirectory } from './bot-directory.js';
import { QueryPublisher } from './query-publisher.js';
import { SyncHub } from './sync-hub.js';
import { TelegramController } from './telegram.controller.js';
import { WebChatController } from './webchat.controller.js';

@Module({})
export class IngressModule {
  static register(): DynamicModule {
    return { module: IngressModule, controllers: [BotsController, TelegramController, WebChatController], providers: [BotDirectory, QueryPublisher, SyncHub] };
  }
}
