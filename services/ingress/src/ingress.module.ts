import { Module, type DynamicModule } from '@nestjs/common';
import { BearerToken } from '@conveyor/service-kit';
import { BotsController } from './bots.controller.js';
import { BotDirectory } from './bot-directory.js';
import type { WebChatAccess } from './env.js';
import { QueryPublisher } from './query-publisher.js';
import { SyncHub } from './sync-hub.js';
import { TelegramPathController } from './legacy-webhooks.controller.js';
import { WebhookHandler } from './webhook.handler.js';
import { WEBCHAT_TOKEN, WebChatController, WebChatPageController, WebChatTokenGuard } from './webchat.controller.js';

@Module({})
export class IngressModule {
  /** The web chat's routes exist only when it is switched on: off, `/chat` is as unknown as any other path. */
  static register(webChat: WebChatAccess): DynamicModule {
    const providers = [BotDirectory, QueryPublisher, SyncHub, WebhookHandler];
    if (!webChat.enabled) return { module: IngressModule, controllers: [BotsController, TelegramPathController], providers };
    return {
      module: IngressModule,
      controllers: [BotsController, TelegramPathController, WebChatPageController, WebChatController],
      providers: [...providers, WebChatTokenGuard, { provide: WEBCHAT_TOKEN, useValue: new BearerToken(webChat.token) }],
    };
  }
}
