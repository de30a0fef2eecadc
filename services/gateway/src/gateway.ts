import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { describeIssues } from '@conveyor/bus';
import { ConnectionStateStore, ConnectionSupervisor, isLeaseLost, serveGatewaySends, type ConnectionLease, type ConnectionTarget, type LiveConnection } from '@conveyor/gateway';
import { holdsConnection } from '@conveyor/platform-kit';
import { platforms } from '@conveyor/platforms';
import { meter } from '@conveyor/telemetry';
import type { GatewayInfra } from './env.js';
import { GatewayInbound } from './inbound.publisher.js';

const connections = meter.createUpDownCounter('conveyor_gateway_connections', { description: 'Platform connections this replica holds open' });
const leaseEvents = meter.createCounter('conveyor_gateway_lease_events', { description: 'Connection lease acquisitions and losses, connection failures, and connection state writes that failed' });
const malformed = meter.createCounter('conveyor_gateway_malformed_events', { description: 'Frames from a platform connection that could not be understood or were dropped' });
const sends = meter.createCounter('conveyor_gateway_sends', { description: 'Outbound reply parts answered by this replica, by outcome' });

/** Adapters whose platform is reached over a held connection. */
function connectionAdapters(): string[] {
  return platforms.all().filter((p) => p.connection).map((p) => p.name);
}

/**
 * The gateway role: holds the live connection of each enabled bot whose platform needs one, exactly
 * one replica per bot (ConnectionSupervisor), publishes what arrives as queries and answers the
 * dispatcher's outbound requests for the bots it holds.
 */
export async function startGateway(_app: INestApplication, infra: GatewayInfra): Promise<() => Promise<void>> {
  const env = infra.env;
  const ownerId = env.GATEWAY_INSTANCE_ID ?? `${hostname()}-${randomBytes(4).toString('hex')}`;
  const inbound = new GatewayInbound(infra);
  const adapters = connectionAdapters();
  const connect = async (target: ConnectionTarget, lease: ConnectionLease): Promise<LiveConnection> => {
    const platform = platforms.get(target.adapter);
    if (!platform?.connection) throw new Error(`adapter ${target.adapter} holds no connection`);
    const parsed = platform.botConfigSchema.safeParse(target.config ?? {});
    // Retried with the backoff like any failed connection, so fixing the row is picked up.
    if (!parsed.success) throw new Error(`invalid ${platform.name} settings of bot ${target.botId}: ${describeIssues(parsed.error)}`);
    const config = parsed.data;
    const open = await platform.connection.open({
      botId: target.botId,
      config,
      logger: infra.logger,
      fence: () => lease.check(),
      publish: (q) => inbound.publish(platform.name, lease, q),
      shared: { redis: infra.redis, prefix: infra.topology.prefix },
      malformed: (reason, detail) => {
        malformed.add(1, { adapter: platform.name });
        infra.logger.warn({ botId: target.botId, adapter: platform.name, reason, ...detail }, 'malformed event from the platform connection');
      },
      state: (schema) => new ConnectionStateStore({
        redis: infra.redis,
        prefix: infra.topology.prefix,
        lease,
        schema,
        onInvalid: (reason) => {
          malformed.add(1, { adapter: platform.name });
          infra.logger.warn({ botId: target.botId, adapter: platform.name, reason }, 'stored connection state not understood; connecting afresh');
        },
        onWriteFailed: (err) => leaseEvents.add(1, { event: isLeaseLost(err) ? 'state_write_fenced' : 'state_write_failed' }),
      }),
    });
    const sub = serveGatewaySends({
      nc: infra.nc, topology: infra.topology, redis: infra.redis, prefix: infra.topology.prefix, botId: target.botId, lease, connection: open, logger: infra.logger,
      count: (outcome) => sends.add(1, { adapter: platform.name, outcome }),
    });
    infra.logger.info({ botId: target.botId, adapter: platform.name, fencingToken: lease.token, owner: ownerId }, 'platform connection open');
    connections.add(1, { adapter: platform.name });
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      sub.unsubscribe();
      connections.add(-1, { adapter: platform.name });
    };
    void open.ended.then(uncount);
    return {
      ended: open.ended,
      close: async (reason) => {
        // Stop taking outbound parts first: a part arriving now goes to the next owner.
        uncount();
        await open.close(reason);
      },
    };
  };
  const supervisor = new ConnectionSupervisor({
    redis: infra.redis,
    prefix: infra.topology.prefix,
    ownerId,
    leaseTtlMs: env.GATEWAY_LEASE_TTL_MS,
    ...(env.GATEWAY_TICK_MS !== undefined ? { tickMs: Math.min(env.GATEWAY_TICK_MS, Math.floor(env.GATEWAY_LEASE_TTL_MS / 2)) } : {}),
    maxConnections: env.GATEWAY_MAX_CONNECTIONS,
    targets: async () => {
      const bots = await infra.config.enabledBots();
      return bots
        .filter((b) => {
          if (!adapters.includes(b.adapter)) return false;
          const platform = platforms.get(b.adapter);
          return platform !== undefined && holdsConnection(platform, b.adapterConfig);
        })
        .map((b) => ({ botId: b.id, adapter: b.adapter, config: b.adapterConfig }));
    },
    connect,
    logger: infra.logger,
    events: {
      owned: () => leaseEvents.add(1, { event: 'acquired' }),
      lost: () => leaseEvents.add(1, { event: 'lost' }),
      connectFailed: () => leaseEvents.add(1, { event: 'connect_failed' }),
    },
  });
  supervisor.start();
  infra.logger.info({ owner: ownerId, adapters, leaseTtlMs: env.GATEWAY_LEASE_TTL_MS }, 'gateway supervising platform connections');
  return () => supervisor.stop();
}
