import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { storableText } from '@conveyor/contracts';
import { newAcceptedMessageId, normalizeBotId } from '@conveyor/http-bot';
import { ConversationStore } from '@conveyor/persistence';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { BotDirectory, type BotEntry } from './bot-directory.js';
import { readRawBody } from './raw-body.js';
import { OverloadedError, QueryPublisher } from './query-publisher.js';
import { WEBCHAT_PAGE } from './webchat.page.js';

const SESSION_RE = /^[A-Za-z0-9_-]{1,100}$/;
const MAX_TEXT = 10_000;
const UNKNOWN_CHAT = { error: 'unknown bot or session' };

/**
 * The web chat playground at `/chat`: pick a bot, chat, watch the answer stream in (SSE), reset the
 * conversation. Messages enter the bot's pipeline like any platform's (route adapter `webchat`,
 * session = the browser's session id, a person chat); replies come back from the dispatcher over
 * core NATS to whichever ingress replica holds the browser's event stream.
 */
@Controller('chat')
export class WebChatController {
  private readonly conversations: ConversationStore;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly bots: BotDirectory,
    private readonly queries: QueryPublisher,
  ) {
    this.conversations = new ConversationStore(infra.db);
  }

  @Get()
  page(@Res() res: Response) {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.send(WEBCHAT_PAGE);
  }

  @Get('api/bots')
  async list() {
    const rows = await this.infra.prisma.bot.findMany({ where: { enabled: true }, select: { id: true, name: true, adapter: true }, orderBy: { name: 'asc' }, take: 500 });
    return { bots: rows };
  }

  /**
   * The bot a chat URL names, or null (→ 404) for a bot id that is no UUID, a session id the page would
   * not make, or no such bot. Checked before any lookup: Postgres and NATS subjects cannot hold every id.
   */
  private async findChat(rawBotId: string, sessionId: string): Promise<{ botId: string; bot: BotEntry } | null> {
    const botId = normalizeBotId(rawBotId);
    if (!botId || !SESSION_RE.test(sessionId)) return null;
    const bot = await this.bots.find(botId);
    return bot ? { botId, bot } : null;
  }

  @Get('api/bots/:botId/sessions/:sessionId/events')
  async events(@Param('botId') rawBotId: string, @Param('sessionId') sessionId: string, @Req() req: Request, @Res() res: Response) {
    const chat = await this.findChat(rawBotId, sessionId);
    if (!chat) return void res.status(404).json(UNKNOWN_CHAT);
    const { botId } = chat;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    res.write(': connected\n\n');
    const sub = this.infra.nc.subscribe(this.infra.topology.subjects.webchat(botId, sessionId), {
      callback: (err, msg) => {
        if (!err) res.write(`event: part\ndata: ${msg.string()}\n\n`);
      },
    });
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    req.on('close', () => {
      clearInterval(keepAlive);
      sub.unsubscribe();
    });
  }

  @Post('api/bots/:botId/sessions/:sessionId/messages')
  async message(@Param('botId') rawBotId: string, @Param('sessionId') sessionId: string, @Req() req: Request, @Res() res: Response) {
    const chat = await this.findChat(rawBotId, sessionId);
    if (!chat) return void res.status(404).json(UNKNOWN_CHAT);
    const { botId, bot } = chat;
    if (!bot.enabled) return void res.status(403).json({ error: 'Bot is disabled' });
    let rawText: unknown;
    try {
      rawText = (JSON.parse((await readRawBody(req, 64 * 1024)).toString('utf8')) as { text?: unknown }).text;
    } catch {
      return void res.status(400).json({ error: 'body must be JSON {"text": "..."}' });
    }
    const text = typeof rawText === 'string' ? storableText(rawText) : '';
    if (!text.trim() || text.length > MAX_TEXT) return void res.status(400).json({ error: `text must be 1–${MAX_TEXT} characters` });
    const replyTo = newAcceptedMessageId();
    try {
      const { queryId } = await this.queries.publish({
        botId, adapter: 'webchat', acceptedMessageId: replyTo, sessionId, launcherType: 'person', senderId: sessionId, senderName: 'Web chat', messageChain: [{ type: 'Plain', text }],
      });
      res.status(202).json({ queryId, replyTo });
    } catch (err) {
      this.infra.logger.error({ err, botId }, 'web chat message not accepted');
      res.status(err instanceof OverloadedError ? 503 : 500).json({ error: err instanceof OverloadedError ? 'the bot is overloaded; try again shortly' : 'the message could not be accepted' });
    }
  }

  @Post('api/bots/:botId/sessions/:sessionId/reset')
  async reset(@Param('botId') rawBotId: string, @Param('sessionId') sessionId: string, @Res() res: Response) {
    const chat = await this.findChat(rawBotId, sessionId);
    if (!chat) return void res.status(404).json(UNKNOWN_CHAT);
    const removed = await this.conversations.reset({ botId: chat.botId, launcherType: 'person', launcherId: sessionId });
    res.status(201).json({ removed });
  }
}
