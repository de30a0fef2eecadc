import { z } from 'zod';
import type { Infra, ServiceEnv } from '@conveyor/service-kit';

export const GatewayEnv = z.object({
  /**
   * How long a bot's connection lease lives without renewal: a killed replica's bots are taken over
   * after at most this plus one tick. Renewed every third of it.
   */
  GATEWAY_LEASE_TTL_MS: z.coerce.number().int().min(1_000).max(300_000).default(10_000),
  /** How often leases are renewed and free bots tried (a released bot is taken within one tick); default a third of the TTL. */
  GATEWAY_TICK_MS: z.coerce.number().int().min(100).max(100_000).optional(),
  /** Most bot connections one replica holds; the other bots wait for another replica. */
  GATEWAY_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(100_000).default(1_000),
  /** This replica's id in the leases (logs show who owns a bot); default the host name and a random suffix. */
  GATEWAY_INSTANCE_ID: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/).optional(),
});
export type GatewayEnv = z.infer<typeof GatewayEnv>;

/** The gateway's connections and settings, as `runService` builds them from `GatewayEnv`. */
export type GatewayInfra = Infra<ServiceEnv<typeof GatewayEnv>>;
