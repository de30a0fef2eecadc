import { Controller, Get, Inject, Injectable, Param, Post, Req, Res, UnauthorizedException, UseGuards, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';
import { newAcceptedMessageId, normalizeBotId } from '@conveyor/http-bot';
import { ConversationStore } from '@conveyor/persistence';
import { INFRA, type BearerToken, type Infra } from '@conveyor/service-kit';
import { BotDirectory, type BotEntry } from './bot-directory.js';
import { BodyTooLargeError, readRawBody } from './raw-body.js';
import { OverloadedError, QueryPublisher } from './query-publisher.js';
import { DebugChat } from '@conveyor/contracts';
import { parseWebChatMessage, webChatSessionId, WEBCHAT, WEBCHAT_MAX_BODY_BYTES, WEBCHAT_PAGE } from '@conveyor/webchat';

const UNKNOWN_CHAT = { error: `unknown bot, or no session key in ${DebugChat.CHAT_SESSION_KEY_HEADER} (32–128 letters, digits, _ or -)` };

/** The provider of the web chat's `BearerToken` (WEBCHAT_TOKEN). */
export const WEBCHAT_TOKEN = Symbol('WEBCHAT_TOKEN');

/**
 * Every web chat API call, the event stream included, carries `Authorization: Bearer <WEBCHAT_TOKEN>`:
 * the page reads the stream with fetch rather than EventSource, so the token never has to travel in a
 * URL (where access logs, history and Referer would keep it) or in a cookie (which the browser would
 * send on its own). Anything else is 401 with a JSON error, before the bot or session is looked at.
 */
@Injectable()
export class WebChatTokenGuard implements CanActivate {
  constructor(@Inject(WEBCHAT_TOKEN) private readonly token: BearerToken) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    if (this.token.matches(http.getRequest<Request>().header('authorization'))) return true;
    http.getResponse<Response>().setHeader('WWW-Authenticate', 'Bearer realm="conveyor web chat"');
    throw new UnauthorizedException({ error: 'missing or wrong web chat token' });
  }
}

/**
 * The web chat playground at `/chat`: pick a bot, chat, watch the answer stream in (SSE), reset the
 * conversation. Served only when WEBCHAT_ENABLED is set (see IngressModule). The page holds no
 * secret: it asks for the token, or takes it from the URL fragment (`/chat#token=…`, which browsers
 * never send), and keeps it in sessionStorage.
 */
@Controller('chat')
export class WebChatPageController {
  @Get()
  page(@Res() res: Response) {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.send(WEBCHAT_PAGE);
  }
}

/**
 * The web chat's API. Messages enter the bot's pipeline like any platform's (route adapter `webchat`,
 * a person chat), in conversations of their own: `chatKey` keys a web chat apart from the bot's
 * platform chats, so session "alice" here is not the HTTP-bot or Telegram user "alice". The session is
 * the one the caller's `X-Chat-Session-Key` names (see `webChatSessionId`): the token lets a caller in,
 * the key decides which conversation it reads, so one tester never reads another's. Replies come back
 * from the dispatcher over core NATS to whichever ingress replica holds the browser's event stream.
 */
@Controller('chat/api')
@UseGuards(WebChatTokenGuard)
export class WebChatController {
  private readonly conversations: ConversationStore;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly bots: BotDirectory,
    private readonly queries: QueryPublisher,
  ) {
    this.conversations = new ConversationStore(infra.db);
  }

  @Get('bots')
  async list() {
    const bots = await this.infra.config.enabledBots();
    return { bots: bots.slice(0, 500).map(({ id, name, adapter }) => ({ id, name, adapter })) };
  }

  /**
   * The bot a chat URL names and the session its key names, or null (→ 404) for a bot id that is no
   * UUID, no or a malformed session key, or no such bot. Checked before any lookup: Postgres and NATS
   * subjects cannot hold every id.
   */
  private async findChat(rawBotId: string, req: Request): Promise<{ botId: string; sessionId: string; bot: BotEntry } | null> {
    const botId = normalizeBotId(rawBotId);
    const sessionId = webChatSessionId(req.header(DebugChat.CHAT_SESSION_KEY_HEADER));
    if (!botId || !sessionId) return null;
    const bot = await this.bots.find(botId);
    return bot ? { botId, sessionId, bot } : null;
  }

  @Get('bots/:botId/session/events')
  async events(@Param('botId') rawBotId: string, @Req() req: Request, @Res() res: Response) {
    const chat = await this.findChat(rawBotId, req);
    if (!chat) return void res.status(404).json(UNKNOWN_CHAT);
    const { botId, sessionId } = chat;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    // Express routes HEAD here too. A HEAD response has no body, so Node would hold its headers back
    // until the end, which a stream never reaches: the client would wait for ever, and the
    // subscription with it. The headers are the whole answer.
    if (req.method === 'HEAD') return void res.end();
    const sub = this.infra.nc.subscribe(this.infra.topology.subjects.webchat(botId, sessionId), {
      callback: (err, msg) => {
        if (!err) res.write(`event: part\ndata: ${msg.string()}\n\n`);
      },
    });
    // `connected` promises the subscription is in place at the server, so a message sent once the
    // client sees it cannot be answered before the stream listens.
    await this.infra.nc.flush().catch(() => undefined);
    res.write(': connected\n\n');
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    req.on('close', () => {
      clearInterval(keepAlive);
      sub.unsubscribe();
    });
  }

  @Post('bots/:botId/session/messages')
  async message(@Param('botId') rawBotId: string, @Req() req: Request, @Res() res: Response) {
    const chat = await this.findChat(rawBotId, req);
    if (!chat) return void res.status(404).json(UNKNOWN_CHAT);
    const { botId, sessionId, bot } = chat;
    if (!bot.enabled) return void res.status(403).json({ error: 'Bot is disabled' });
    let rawBody: Buffer;
    try {
      rawBody = await readRawBody(req, WEBCHAT_MAX_BODY_BYTES);
    } catch (err) {
      if (err instanceof BodyTooLargeError) return void res.status(413).json({ error: 'body over 64 KiB' });
      return void res.status(400).json({ error: 'body must be JSON {"text": "..."}' });
    }
    const parsed = parseWebChatMessage(rawBody);
    if (!parsed.ok) return void res.status(400).json({ error: parsed.error });
    const { text } = parsed;
    const replyTo = newAcceptedMessageId();
    try {
      const { queryId } = await this.queries.publish({
        botId, adapter: WEBCHAT, acceptedMessageId: replyTo, sessionId, launcherType: 'person', senderId: sessionId, senderName: 'Web chat', messageChain: [{ type: 'Plain', text }],
      });
      res.status(202).json({ queryId, replyTo, sessionId });
    } catch (err) {
      this.infra.logger.error({ err, botId }, 'web chat message not accepted');
      res.status(err instanceof OverloadedError ? 503 : 500).json({ error: err instanceof OverloadedError ? 'the bot is overloaded; try again shortly' : 'the message could not be accepted' });
    }
  }

  @Post('bots/:botId/session/reset')
  async reset(@Param('botId') rawBotId: string, @Req() req: Request, @Res() res: Response) {
    const chat = await this.findChat(rawBotId, req);
    if (!chat) return void res.status(404).json(UNKNOWN_CHAT);
    const removed = await this.conversations.reset({ botId: chat.botId, adapter: WEBCHAT, launcherType: 'person', launcherId: chat.sessionId });
    res.status(201).json({ removed });
  }
}
