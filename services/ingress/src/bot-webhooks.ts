import type { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { LIMITS } from '@conveyor/contracts';
import { isBusBackpressure, PayloadTooLargeError } from '@conveyor/bus';
import { HTTP_BOT, HttpBotEndpoint, HttpBotError, normalizeBotId, requestIdFor, type HttpBotResponse } from '@conveyor/http-bot';
import { ConversationStore } from '@conveyor/persistence';
import { headerOf } from '@conveyor/platform-kit';
import { platforms } from '@conveyor/platforms';
import { INFRA, writeJson, type Infra } from '@conveyor/service-kit';
import { BotDirectory } from './bot-directory.js';
import { BodyTooLargeError, readRawBody } from './raw-body.js';
import { OverloadedError, QueryPublisher } from './query-publisher.js';
import { SyncHub } from './sync-hub.js';
import { WebhookHandler } from './webhook.handler.js';
import { type WebhookRoute } from './webhook-routes.js';

/** Some bodies above 1 MiB are still read so that the 413 comes from the adapter check, as in LangBot. */
const READ_LIMIT = LIMITS.inboundBodyBytes + 1;

/**
 * Every bot's webhook (`webhookRouteOf`). At `/bots/{bot_uuid}[/...]` an `http-bot` bot speaks
 * LangBot's HTTP-bot protocol (push, `/sync`, `/reset`); a bot of a platform with a webhook (see
 * PlatformInbound) is handed to that platform; any other bot is 400 adapter-unsupported.
 * `POST /telegram/{bot_id}` is the Telegram webhook's path from before every platform's webhook moved
 * to `/bots/{bot_id}`, kept so webhooks registered with setWebhook keep working.
 */
@Injectable()
export class BotWebhooks {
  private readonly httpBot: HttpBotEndpoint;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly bots: BotDirectory,
    queries: QueryPublisher,
    syncHub: SyncHub,
    private readonly webhooks: WebhookHandler,
  ) {
    const conversations = new ConversationStore(infra.db);
    this.httpBot = new HttpBotEndpoint({
      publish: (message) => queries.publish(message),
      resetConversation: (botId, launcherType, sessionId) => conversations.reset({ botId, adapter: HTTP_BOT, launcherType, launcherId: sessionId }),
      holdSync: (botId, sessionId, waitMs) => syncHub.register(botId, sessionId, waitMs, { botId, adapter: 'http-bot', sessionId }),
    }, infra.logger);
  }

  serve(route: WebhookRoute, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (route.kind === 'bot') return this.bot(route.botId, route.subPath, req, res);
    const telegram = platforms.get('telegram');
    if (!telegram?.inbound) return Promise.resolve(writeJson(res, 404, { ok: false, description: 'Bot not found' }));
    return this.webhooks.serveByPath(telegram, telegram.inbound, route.botId, req, res);
  }

  private async bot(rawBotId: string, subPath: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const botId = normalizeBotId(rawBotId);
      const bot = botId ? await this.bots.find(botId) : null;
      if (!botId || !bot) return send(res, HttpBotError.botNotFound());
      if (bot.adapter !== HTTP_BOT) {
        const platform = platforms.get(bot.adapter);
        if (platform?.inbound) return await this.webhooks.serve(platform, platform.inbound, bot, subPath, req, res);
      }
      if (!bot.enabled) return send(res, HttpBotError.botDisabled());
      if (bot.adapter !== HTTP_BOT) return send(res, HttpBotError.adapterUnsupported());

      let rawBody: Buffer;
      try {
        rawBody = await readRawBody(req, READ_LIMIT);
      } catch (err) {
        if (err instanceof BodyTooLargeError) {
          res.setHeader('Connection', 'close');
          return send(res, HttpBotError.messageTooLarge());
        }
        throw err;
      }
      send(res, await this.httpBot.serve({ botId, adapterConfig: bot.adapterConfig, subPath, rawBody, headers: req.headers, now: new Date() }));
    } catch (err) {
      // The body fit in 1 MiB, but the envelope built from it (routing and component defaults added)
      // is over the bus bound: as much the caller's doing as an oversized body.
      if (err instanceof PayloadTooLargeError) return send(res, HttpBotError.messageTooLarge());
      const requestId = requestIdFor(headerOf(req.headers, 'x-request-id'));
      this.infra.logger.error({ err, requestId }, 'webhook failed');
      const overloaded = err instanceof OverloadedError || isBusBackpressure(err);
      send(res, overloaded ? HttpBotError.overloaded() : HttpBotError.internal(requestId));
    }
  }
}

function send(res: ServerResponse, response: HttpBotResponse): void {
  writeJson(res, response.status, response.body, response.headers);
}
