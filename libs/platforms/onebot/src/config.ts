import { z } from 'zod';

/**
 * Bot settings of a `onebot` bot: LangBot's aiocqhttp keys (`host`, `port`, `access-token`) plus
 * `mode` and `path`. LangBot only listens for the implementation's reverse WebSocket; Conveyor
 * connects to its forward WebSocket server by default (any gateway replica can reach it), and
 * listens in `reverse` mode.
 */
export const OneBotConfigSchema = z.object({
  /**
   * `forward`: Conveyor connects to the implementation's WebSocket server at `host:port`. `reverse`
   * (LangBot's way): the gateway replica holding the bot listens on `host:port` and the implementation
   * connects to it; the other replicas do not listen, so the implementation's retries find the holder.
   */
  mode: z.enum(['forward', 'reverse'], { error: 'mode: "forward" or "reverse"' }).default('forward'),
  /** Forward: the implementation's host (NapCat, Lagrange, go-cqhttp). Reverse: the address to listen on. */
  host: z.string().min(1).max(255).default('127.0.0.1'),
  port: z.coerce.number().int().min(1).max(65535).default(2280),
  /**
   * Forward: sent as `Authorization: Bearer <token>`; empty when the implementation has none.
   * Reverse: what a connecting implementation must present; required, since the listener is open to
   * whoever reaches the port and the first session in holds the bot.
   */
  'access-token': z.string().max(1_000).default('').meta({ secret: true }),
  /** Path of the WebSocket endpoint; `/` serves events and actions together in OneBot v11. */
  path: z.string().startsWith('/').max(1_000).default('/'),
}).superRefine((config, ctx) => {
  if (config.mode === 'reverse' && config['access-token'] === '') {
    ctx.addIssue({
      code: 'custom',
      path: ['access-token'],
      message: 'access-token is required in reverse mode: without it anybody who reaches host:port can connect as the implementation, and the first connection locks the real one out',
    });
  }
});
export type OneBotConfig = z.output<typeof OneBotConfigSchema>;

export function parseOneBotConfig(raw: unknown): OneBotConfig {
  return OneBotConfigSchema.parse(raw ?? {});
}

export function oneBotUrl(config: OneBotConfig): string {
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  return `ws://${host}:${config.port}${config.path}`;
}
