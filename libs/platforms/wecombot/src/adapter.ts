import { plainText, type ReplyRoute } from '@conveyor/contracts';
import { GatewayRelayAdapter } from '@conveyor/gateway';
import type { DeliveryContext, OutboundDeps, OutboundReply, PlatformAdapter, SendResult } from '@conveyor/platform-kit';
import { usesWebhook, WecomBotConfigSchema } from './config.js';
import { WECOM_BOT } from './name.js';
import { writeStream } from './stream.js';

/**
 * WeCom AI bot outbound. Over the long connection every snapshot of a streamed reply (or a whole
 * reply) goes through the gateway relay to the replica holding the bot's WebSocket. In webhook mode nothing is sent to WeCom: WeCom asks
 * for the reply's stream (refresh callbacks to the ingress) until it is finished; each part stores
 * the reply's content so far and whether it is the final one where the ingress reads it (Redis), by
 * the stream id the route carries.
 */
export class WecomBotAdapter implements PlatformAdapter {
  readonly name = WECOM_BOT;
  private readonly relay: GatewayRelayAdapter;

  constructor(private readonly deps: Pick<OutboundDeps, 'redis' | 'prefix' | 'configs' | 'nc' | 'topology' | 'logger'>) {
    this.relay = new GatewayRelayAdapter(WECOM_BOT, { nc: deps.nc, topology: deps.topology, logger: deps.logger, streamSnapshots: true });
  }

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const config = WecomBotConfigSchema.safeParse(bot.adapterConfig);
    if (!config.success) return { delivered: false, reason: `invalid wecombot settings of bot ${route.botId}: ${config.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
    if (!usesWebhook(config.data)) return this.relay.deliver(route, reply, ctx);
    if (!/^[0-9a-f]{32}$/.test(route.replyTo)) return { delivered: false, reason: `wecombot: the route names no stream (replyTo ${JSON.stringify(route.replyTo.slice(0, 50))})` };
    try {
      await writeStream(this.deps.redis, this.deps.prefix, route.botId, route.replyTo, { content: plainText(reply.message), finish: reply.isFinal });
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `wecombot: the stream was not stored (${err instanceof Error ? err.message : String(err)})` };
    }
  }
}
