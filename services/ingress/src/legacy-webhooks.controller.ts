import { Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { platforms } from '@conveyor/platforms';
import { WebhookHandler } from './webhook.handler.js';

/**
 * `POST /telegram/{bot_id}`: the Telegram webhook's path before every platform's webhook moved to
 * `POST /bots/{bot_id}`; kept so webhooks registered with setWebhook keep working.
 */
@Controller('telegram')
export class TelegramPathController {
  constructor(private readonly webhooks: WebhookHandler) {}

  @Post(':botId')
  @HttpCode(200)
  async webhook(@Param('botId') rawBotId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const telegram = platforms.get('telegram');
    if (!telegram?.inbound) return void res.status(404).json({ ok: false, description: 'Bot not found' });
    return this.webhooks.serveByPath(telegram, telegram.inbound, rawBotId, req, res);
  }
}
