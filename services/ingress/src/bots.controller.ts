import { All, Controller, Inject, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { LIMITS } from '@conveyor/contracts';
import { isBusBackpressure, PayloadTooLargeError } from '@conveyor/bus';
import { HTTP_BOT, HttpBotEndpoint, HttpBotError, normalizeBotId, requestIdFor, type HttpBotResponse } from '@conveyor/http-bot';
import { ConversationStore } from '@conveyor/persistence';
import { platforms } from '@conveyor/platforms';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { BotDirectory } from './bot-directory.js';
import { BodyTooLargeError, readRawBody } from './raw-body.js';
import { OverloadedError, QueryPublisher } from './query-publisher.js';
import { SyncHub } from './sync-hub.js';
import { WebhookHandler } from './webhook.handler.js';

/** Some bodies above 1 MiB are still read so that the 413 comes from the adapter check, as in LangBot. */
const READ_LIMIT = LIMITS.inboundBodyBytes + 1;

/**
 * `/bots/{bot_uuid}[/...]`, every bot's webhook. An `http-bot` bot speaks LangBot's HTTP-bot protocol
 * here (push, `/sync`, `/reset`); a bot of a platform with a webhook (see PlatformInbound) is handed to
 * that platform; any other bot is 400 adapter-unsupported.
 */
@Controller('bots')
export class BotsController {
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

  @All(':botId')
  push(@Param('botId') botId: string, @Req() req: Request, @Res() res: Response) {
    return this.handle(botId, '', req, res);
  }

  @All(':botId/*subPath')
  subPath(@Param('botId') botId: string, @Param('subPath') sub: string | string[], @Req() req: Request, @Res() res: Response) {
    return this.handle(botId, Array.isArray(sub) ? sub.join('/') : sub, req, res);
  }

  private async handle(rawBotId: string, subPath: string, req: Request, res: Response): Promise<void> {
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
      const requestId = requestIdFor(req.header('x-request-id'));
      this.infra.logger.error({ err, requestId }, 'webhook failed');
      const overloaded = err instanceof OverloadedError || isBusBackpressure(err);
      send(res, overloaded ? HttpBotError.overloaded() : HttpBotError.internal(requestId));
    }
  }
}

function send(res: Response, response: HttpBotResponse): void {
  for (const [k, v] of Object.entries(response.headers ?? {})) res.setHeader(k, v);
  res.status(response.status).json(response.body);
}
