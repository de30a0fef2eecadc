import { Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { LIMITS } from '@conveyor/contracts';
import { PayloadTooLargeError, PayloadValidationError } from '@conveyor/bus';
import { normalizeBotId, newAcceptedMessageId } from '@conveyor/http-bot';
import { parseTelegramConfig, parseTelegramUpdate, TELEGRAM_SECRET_HEADER, verifyTelegramSecret } from '@conveyor/delivery';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { BotDirectory } from './bot-directory.js';
import { BodyTooLargeError, readRawBody } from './raw-body.js';
import { OverloadedError, QueryPublisher } from './query-publisher.js';
import { checkTelegramInbound } from './telegram-inbound.js';

/**
 * Telegram Bot API webhook: `POST /telegram/{bot_id}` (register it with setWebhook and the bot's
 * `webhook_secret` as secret_token). The secret-token header is checked in constant time; a repeated
 * update (Telegram retries until it gets a 2xx) is dropped by its update_id in JetStream's window.
 * For the same reason an update that can never become a query is answered 200 and dropped with a
 * warning: any other answer would bring it back again and again.
 */
@Controller('telegram')
export class TelegramController {
  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly bots: BotDirectory,
    private readonly queries: QueryPublisher,
  ) {}

  @Post(':botId')
  @HttpCode(200)
  async webhook(@Param('botId') rawBotId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const botId = normalizeBotId(rawBotId);
    const bot = botId ? await this.bots.find(botId) : null;
    if (!botId || !bot || bot.adapter !== 'telegram') return void res.status(404).json({ ok: false, description: 'Bot not found' });
    if (!bot.enabled) return void res.status(403).json({ ok: false, description: 'Bot is disabled' });
    let config;
    try {
      config = parseTelegramConfig(bot.adapterConfig);
    } catch (err) {
      this.infra.logger.error({ err, botId }, 'telegram bot misconfigured');
      return void res.status(500).json({ ok: false, description: 'bot misconfigured' });
    }
    if (!verifyTelegramSecret(config, req.header(TELEGRAM_SECRET_HEADER))) return void res.status(401).json({ ok: false, description: 'invalid secret token' });
    const drop = (reason: string, updateId?: number) => {
      this.infra.logger.warn({ botId, updateId, reason }, 'telegram update dropped');
      res.status(200).json({ ok: true });
    };
    let body: unknown;
    try {
      body = JSON.parse((await readRawBody(req, LIMITS.inboundBodyBytes)).toString('utf8'));
    } catch (err) {
      if (err instanceof SyntaxError) return drop('the body is not valid JSON');
      if (err instanceof BodyTooLargeError) {
        res.setHeader('Connection', 'close');
        return drop(`the update is larger than ${LIMITS.inboundBodyBytes} bytes`);
      }
      throw err;
    }
    // The pipeline's at-bot rule compares At targets with the adapter's account id; for Telegram that is the bot id.
    const parsed = parseTelegramUpdate(body, config, botId);
    if (!parsed.ok) return drop(`not an update: ${parsed.error}`);
    if (!parsed.inbound) return void res.status(200).json({ ok: true });
    const checked = checkTelegramInbound(parsed.inbound);
    if (!checked.ok) return drop(checked.reason, parsed.inbound.updateId);
    const m = checked.inbound;
    try {
      await this.queries.publish({
        botId,
        adapter: 'telegram',
        acceptedMessageId: m.messageId || newAcceptedMessageId(),
        sessionId: m.sessionId,
        launcherType: m.launcherType,
        senderId: m.senderId,
        senderName: m.senderName,
        ...(m.groupName !== undefined ? { groupName: m.groupName } : {}),
        messageChain: m.messageChain,
        msgId: `tg:${botId}:${m.updateId}`,
        stream: config['enable-stream-reply'],
      });
    } catch (err) {
      // Nothing built from this update fits the bus (e.g. a text near 1 MiB): retrying cannot help.
      if (err instanceof PayloadTooLargeError || err instanceof PayloadValidationError) return drop(err.message, m.updateId);
      this.infra.logger.error({ err, botId }, 'telegram update not accepted');
      // Telegram retries a non-2xx webhook answer later.
      return void res.status(err instanceof OverloadedError ? 503 : 500).json({ ok: false });
    }
    res.status(200).json({ ok: true });
  }
}
