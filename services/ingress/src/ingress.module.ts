import { Module, type DynamicModule } from '@nestjs/common';
import { BearerToken } from '@conveyor/service-kit';
import { BotWebhooks } from './bot-webhooks.js';
import { BotDirectory } from './bot-directory.js';
import type { WebChatAccess } from './env.js';
import { QueryPublisher } from './query-publisher.js';
import { SyncHub } from './sync-hub.js';
import { WebhookHandler } from './webhook.handler.js';
import { WEBCHAT_TOKEN, WebChatController, WebChatPageController, WebChatTokenGuard } from './webchat.controller.js';

@Module({})
export class IngressModule {
  /** The web chat's routes exist only when it is switched on: off, `/chat` is as unknown as any other path. */
  static register(webChat: WebChatAccess): DynamicModule {
    // No webhook controller: BotWebhooks serves them ahead of the framework (`rawRoutes` in main.ts).
    const providers = [BotDirectory, QueryPublisher, SyncHub, WebhookHandler, BotWebhooks];
    if (!webChat.enabled) return { module: IngressModule, providers };
    return {
      module: IngressModule,
      controllers: [WebChatPageController, WebChatController],
      providers: [...providers, WebChatTokenGuard, { provide: WEBCHAT_TOKEN, useValue: new BearerToken(webChat.token) }],
    };
  }
}
