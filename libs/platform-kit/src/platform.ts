import type { z } from 'zod';
import type { PlatformInbound } from './inbound.js';
import type { OutboundDeps, PlatformAdapter } from './outbound.js';
import type { PlatformConnection } from './connection.js';

/**
 * What a platform package (libs/platforms/<name>) exports: one `Platform` value, registered by one
 * line in libs/platforms/registry. Everything platform-specific lives in that package: its bot config
 * schema, its webhook (verification and parsing into queries, or a protocol answer such as a
 * challenge), its outbound adapter and its conversions. Services never name a platform; they look
 * the bot's `adapter` up in the registry.
 *
 * Layers, one way only: contracts ← platform-kit ← platforms/<name> ← platforms/registry ← services.
 * libs/delivery depends on platform-kit (for `PlatformAdapter`) and never on a platform.
 *
 * To add a platform: a package with `export const myPlatform: Platform<MyConfig>`, its line in the
 * registry, the workspace entries (root package.json, tsconfig.json, Dockerfile), a fake of the
 * platform under test/src/fakes and an e2e test.
 */
export interface Platform<C = unknown> {
  /** The adapter name: a bot's `adapter` in conveyor.yaml and `ReplyRoute.adapter` (lower-case, `-`). */
  readonly name: string;
  /**
   * The bot's `config:` in conveyor.yaml, with LangBot's adapter YAML keys where LangBot has them. A
   * field holding a secret (a token, a signing or encryption key) carries `.meta({ secret: true })`:
   * the admin API masks exactly those, whatever the key is called.
   */
  readonly botConfigSchema: z.ZodType<C>;
  /**
   * False for a channel every bot has (the web chat): no bot is configured with it, its chats are
   * kept apart from a bot's platform chats (see chatKey in contracts).
   */
  readonly configurable: boolean;
  /** Whether replies stream by default when the ingress does not decide it (LangBot's `is_stream_output_supported`). */
  readonly streamsByDefault: boolean;
  /** The webhook at `POST /bots/{bot_id}[/...]`; absent for platforms whose inbound has its own routes. */
  readonly inbound?: PlatformInbound<C>;
  /** A connection the gateway service holds (one replica per bot), for platforms without a webhook. */
  readonly connection?: PlatformConnection<C>;
  /** Builds the platform's outbound adapter, once per dispatcher replica. */
  outbound(deps: OutboundDeps): PlatformAdapter;
}

/** Parses a bot's stored config with the platform's schema; throws a ZodError naming the field. */
export function parseBotConfig<C>(platform: Platform<C>, raw: unknown): C {
  return platform.botConfigSchema.parse(raw ?? {});
}

/**
 * Whether the gateway holds a connection for a bot of this platform with these raw settings. Settings
 * the platform's schema refuses count as held, so the gateway tries them and logs why they fail.
 */
export function holdsConnection<C>(platform: Platform<C>, rawConfig: unknown): boolean {
  const connection = platform.connection;
  if (!connection) return false;
  if (!connection.holds) return true;
  const parsed = platform.botConfigSchema.safeParse(rawConfig ?? {});
  return parsed.success ? connection.holds(parsed.data) : true;
}
