import { plainText, type ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { TelegramApi, TelegramApiError } from './bot-api.js';
import { parseTelegramConfig } from './config.js';

/** LangBot's placeholder text for a streaming card. */
export const TELEGRAM_PLACEHOLDER = 'Thinking...';
/** LangBot pushes a streamed update every 8th chunk (`(msg_seq - 1) % 8 == 0`) and on the final one. */
export const TELEGRAM_EDIT_EVERY = 8;
const MAX_TEXT = 4096;

const truncate = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, 4000)}\n\n… (truncated)` : text);

/**
 * Telegram outbound. Whole replies are `sendMessage`. With `enable-stream-reply`, the first streamed
 * part sends the `Thinking...` placeholder, later parts `editMessageText` it, throttled as LangBot
 * does (first visible text, then every 8th snapshot, and the final one), and the final part is always
 * an edit. The placeholder's message id is kept with the reply in Redis, so a part resumed by another
 * replica edits the same message (an edit is idempotent; only a crash between a `sendMessage` and its
 * bookkeeping can repeat that one message).
 */
export class TelegramAdapter implements PlatformAdapter {
  readonly name = 'telegram' as const;

  constructor(private readonly configs: BotConfigs, private readonly fetchImpl?: typeof fetch) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const config = parseTelegramConfig(bot.adapterConfig);
    const api = new TelegramApi(config.api_base_url, config.token, { ...(ctx.signal ? { signal: ctx.signal } : {}), ...(this.fetchImpl ? { fetchImpl: this.fetchImpl } : {}) });
    const chatId = Number(route.sessionId);
    const text = truncate(plainText(reply.message));
    try {
      const card = await ctx.state.get('tg:msg');
      const streaming = reply.stream && config['enable-stream-reply'];
      if (!streaming) {
        if (reply.stream && !reply.isFinal) return { delivered: true }; // stream off: only the final part shows
        if (!text) return { delivered: true };
        if (card) await this.edit(api, chatId, Number(card), text);
        else await api.call('sendMessage', { chat_id: chatId, text });
        return { delivered: true };
      }
      let messageId = card ? Number(card) : undefined;
      if (messageId === undefined) {
        const sent = await api.call<{ message_id: number }>('sendMessage', { chat_id: chatId, text: TELEGRAM_PLACEHOLDER });
        messageId = sent.message_id;
        await ctx.state.set('tg:msg', String(messageId));
      }
      const visible = (await ctx.state.get('tg:vis')) === '1';
      const lastOrdinal = Number((await ctx.state.get('tg:ord')) ?? 0);
      const bucket = (n: number) => Math.floor((n - 1) / TELEGRAM_EDIT_EVERY);
      const due = !visible || reply.isFinal || bucket(ctx.chunkOrdinal) > bucket(Math.max(1, lastOrdinal));
      if (due && text) {
        await this.edit(api, chatId, messageId, text);
        await ctx.state.set('tg:vis', '1');
        await ctx.state.set('tg:ord', String(ctx.chunkOrdinal));
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: (err as Error).message };
    }
  }

  private async edit(api: TelegramApi, chatId: number, messageId: number, text: string): Promise<void> {
    try {
      await api.call('editMessageText', { chat_id: chatId, message_id: messageId, text });
    } catch (err) {
      // Re-sending the same snapshot (a part resumed after a crash) is not an error.
      if (err instanceof TelegramApiError && err.status === 400 && /not modified/i.test(err.description)) return;
      throw err;
    }
  }
}
