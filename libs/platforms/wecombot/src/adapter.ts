import { plainText, type ReplyRoute } from '@conveyor/contracts';
import type { BotConfigs, DeliveryContext, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import type { RedisClient } from '@conveyor/redis-scripts';
import { WECOM_BOT } from './name.js';
import { writeStream } from './stream.js';

export interface WecomBotAdapterDeps {
  redis: RedisClient;
  prefix: string;
  configs: BotConfigs;
}

/**
 * WeCom AI bot outbound in webhook mode: nothing is sent to WeCom. WeCom asks for the reply's stream
 * (refresh callbacks to the ingress) until it is finished; each part stores the reply's content so
 * far and whether it is the final one where the ingress reads it (Redis), by the stream id the
 * route carries.
 */
export class WecomBotAdapter implements PlatformAdapter {
  readonly name = WECOM_BOT;

  constructor(private readonly deps: WecomBotAdapterDeps) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, _ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    if (!/^[0-9a-f]{32}$/.test(route.replyTo)) return { delivered: false, reason: `wecombot: the route names no stream (replyTo ${JSON.stringify(route.replyTo.slice(0, 50))})` };
    try {
      await writeStream(this.deps.redis, this.deps.prefix, route.botId, route.replyTo, { content: plainText(reply.message), finish: reply.isFinal });
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `wecombot: the stream was not stored (${err instanceof Error ? err.message : String(err)})` };
    }
  }
}
