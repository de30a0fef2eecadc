import { All, Controller, Inject, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { LIMITS } from '@conveyor/contracts';
import { isBusBackpressure, PayloadTooLargeError } from '@conveyor/bus';
import {
  HTTP_BOT,
  HttpBotError,
  acceptedBody,
  newAcceptedMessageId,
  normalizeBotId,
  parseInboundRequest,
  requestIdFor,
  resetOkBody,
  safeParseAdapterConfig,
  type AdapterConfig,
  syncOkBody,
  syncWaitMs,
} from '@conveyor/http-bot';
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
  private readonly conversations: ConversationStore;
  /** Bot rows (as the directory loaded them) already reported as accepting unsigned requests or as misconfigured. */
  private readonly reported = new WeakSet<object>();

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly bots: BotDirectory,
    private readonly queries: QueryPublisher,
    private readonly syncHub: SyncHub,
    private readonly webhooks: WebhookHandler,
  ) {
    this.conversations = new ConversationStore(infra.db);
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
      const adapterConfig = this.adapterConfigOf(botId, bot.adapterConfig);
      if (!adapterConfig) return send(res, HttpBotError.misconfigured());
      const parsed = parseInboundRequest({ subPath, rawBody, headers: req.headers, adapterConfig, now: new Date() });
      if (!parsed.ok) return send(res, parsed.error);

      if (parsed.kind === 'reset') {
        const removed = await this.conversations.reset({ botId, adapter: HTTP_BOT, launcherType: parsed.launcherType, launcherId: parsed.sessionId });
        res.status(200).json(resetOkBody(parsed.sessionId, removed));
        return;
      }
      const acceptedMessageId = newAcceptedMessageId();
      const { message } = parsed;
      // /sync: one waiting call per session across replicas; the session's parts come here, not to the callback.
      const sync = parsed.kind === 'sync' ? await this.syncHub.register(botId, message.sessionId, syncWaitMs(adapterConfig)) : undefined;
      if (sync === null) return send(res, HttpBotError.syncInFlight());
      let duplicate: boolean;
      try {
        ({ duplicate } = await this.queries.publish({
          botId,
          acceptedMessageId,
          sessionId: message.sessionId,
          launcherType: message.launcherType,
          senderId: message.senderId,
          senderName: message.senderName,
          groupName: message.groupName,
          messageChain: message.messageChain,
          idempotencyKey: parsed.idempotencyKey ?? undefined,
        }));
      } catch (err) {
        await sync?.release();
        throw err;
      }
      if (duplicate) {
        await sync?.release();
        return send(res, HttpBotError.idempotencyReplay());
      }
      if (sync) {
        const parts = await sync.wait();
        res.status(200).json(syncOkBody(message.sessionId, acceptedMessageId, parts));
        return;
      }
      res.status(202).json(acceptedBody(message.sessionId, acceptedMessageId));
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

  /**
   * The bot's settings, or undefined when its schema refuses them (a row stored before that was
   * refused). Each loaded row is reported once: a misconfigured one as an error naming the setting,
   * one with signature_required: false as a warning, since then anybody who can reach the ingress
   * can post as any user of that bot.
   */
  private adapterConfigOf(botId: string, raw: unknown): AdapterConfig | undefined {
    const parsed = safeParseAdapterConfig(raw);
    const firstSight = typeof raw === 'object' && raw !== null && !this.reported.has(raw);
    if (firstSight) this.reported.add(raw as object);
    if (!parsed.success) {
      if (firstSight) {
        const fields = parsed.error.issues.map((i) => i.path.join('.') || '(config)');
        this.infra.logger.error({ botId, adapter: HTTP_BOT, fields, issues: parsed.error.issues.map((i) => i.message) }, `http-bot bot misconfigured (${fields.join(', ')}); its requests are refused`);
      }
      return undefined;
    }
    if (firstSight && !parsed.data.signature_required) {
      this.infra.logger.warn({ botId, adapter: HTTP_BOT, signatureRequired: false }, 'http-bot bot accepts unsigned requests (signature_required: false)');
    }
    return parsed.data;
  }
}

function send(res: Response, error: HttpBotError): void {
  for (const [k, v] of Object.entries(error.headers ?? {})) res.setHeader(k, v);
  res.status(error.status).json(error.body);
}
