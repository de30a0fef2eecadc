import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { errorFields, silentLogger, type BusLogger } from './logger.js';

export interface ConnectBusOptions {
  /** One URL or several, e.g. `nats://nats:4222`. */
  url: string | string[];
  /** The service name; the server shows it as the connection name (`nats server report connections`). */
  name: string;
  /** Pause between reconnect attempts. Default 2000 ms (plus the client's jitter). */
  reconnectWaitMs?: number;
  /** Keep retrying the first connect too, instead of failing at once. Default false: fail fast at start. */
  waitOnFirstConnect?: boolean;
  /** Anything else the client accepts (user/pass, tls, ...). */
  extra?: Partial<NodeConnectionOptions>;
  /** When given, connection status changes are logged to it. */
  logger?: BusLogger;
}

/**
 * Connects to NATS with reconnects that never give up: a service that lost its broker keeps trying
 * (its readiness probe reports it) instead of exiting into a crash loop.
 */
export async function connectBus(opts: ConnectBusOptions): Promise<NatsConnection> {
  const nc = await connect({
    ...opts.extra,
    servers: opts.url,
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: opts.reconnectWaitMs ?? 2_000,
    waitOnFirstConnect: opts.waitOnFirstConnect ?? false,
  });
  if (opts.logger) logConnectionStatus(nc, opts.logger);
  return nc;
}

/**
 * Logs connection status events until the connection closes: disconnects and errors as warn/error,
 * reconnects as info. Pings and cluster updates are skipped (noise). Returns when the connection closes.
 */
export async function logConnectionStatus(nc: NatsConnection, logger: BusLogger = silentLogger): Promise<void> {
  const server = nc.getServer();
  logger.info({ server }, 'nats connected');
  void nc.closed().then((err) => {
    if (err) logger.error({ ...errorFields(err), server }, 'nats connection closed with error');
    else logger.info({ server }, 'nats connection closed');
  });
  try {
    for await (const s of nc.status()) {
      switch (s.type) {
        case 'disconnect':
          logger.warn({ server: s.server }, 'nats disconnected');
          break;
        case 'reconnecting':
          logger.warn({}, 'nats reconnecting');
          break;
        case 'reconnect':
          logger.info({ server: s.server }, 'nats reconnected');
          break;
        case 'error':
          logger.error(errorFields(s.error), 'nats async error');
          break;
        case 'ldm':
          logger.warn({ server: s.server }, 'nats server entering lame duck mode');
          break;
        case 'staleConnection':
          logger.warn({}, 'nats connection is stale');
          break;
        case 'slowConsumer':
          logger.warn({ subject: s.sub.getSubject(), pending: s.pending }, 'nats slow consumer');
          break;
        default:
          break;
      }
    }
  } catch (err) {
    logger.warn(errorFields(err), 'nats status iterator ended');
  }
}
