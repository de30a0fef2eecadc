import { z } from 'zod';

/**
 * Bot settings of a `onebot` bot: LangBot's aiocqhttp keys (`host`, `port`, `access-token`) plus
 * `mode`. LangBot only listens for the implementation's reverse WebSocket; Conveyor connects to the
 * implementation's forward WebSocket server (`ws://host:port`), which lets any gateway replica reach
 * it and so keeps exactly one connection per bot across replicas.
 */
export const OneBotConfigSchema = z.object({
  mode: z
    .literal('forward', { error: 'mode: only "forward" (Conveyor connects to the OneBot WebSocket server) is supported; reverse WebSocket is not' })
    .default('forward'),
  /** The OneBot implementation's forward WebSocket host (NapCat, Lagrange, go-cqhttp). */
  host: z.string().min(1).max(255).default('127.0.0.1'),
  port: z.coerce.number().int().min(1).max(65535).default(2280),
  /** Sent as `Authorization: Bearer <token>`; empty when the implementation has none. */
  'access-token': z.string().max(1_000).default(''),
  /** Path of the WebSocket endpoint; `/` serves events and actions together in OneBot v11. */
  path: z.string().startsWith('/').max(1_000).default('/'),
});
export type OneBotConfig = z.output<typeof OneBotConfigSchema>;

export function parseOneBotConfig(raw: unknown): OneBotConfig {
  return OneBotConfigSchema.parse(raw ?? {});
}

export function oneBotUrl(config: OneBotConfig): string {
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  return `ws://${host}:${config.port}${config.path}`;
}
