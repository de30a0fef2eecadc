import { readFileSync } from 'node:fs';
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import { errorFields, silentLogger, type BusLogger } from './logger.js';

/**
 * NATS credentials and TLS from the environment. Every secret can be given inline or as a file
 * (`<NAME>_FILE`, e.g. a mounted Kubernetes Secret); a file wins over the inline value and is read
 * at every connect, so a rotated Secret is picked up on the next restart without a new image.
 *
 * - NATS_USER + NATS_PASSWORD (or NATS_PASSWORD_FILE): user/password (the shipped server config)
 * - NATS_TOKEN (or NATS_TOKEN_FILE): a token
 * - NATS_CREDS_FILE: a decentralized-auth `.creds` file (JWT + nkey seed)
 * - NATS_NKEY_SEED (or NATS_NKEY_SEED_FILE): an nkey seed (`SU...`)
 * - NATS_TLS_CA_FILE, NATS_TLS_CERT_FILE, NATS_TLS_KEY_FILE: TLS; setting any of them turns TLS on
 *   (a CA alone verifies the server; cert and key add a client certificate). NATS_TLS=true turns TLS
 *   on with the system CAs. NATS_TLS_HANDSHAKE_FIRST=true for servers with `handshake_first`.
 */
export function natsAuthFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<NodeConnectionOptions> {
  const secret = (name: string): string | undefined => {
    const file = env[`${name}_FILE`];
    if (file) return readFileSync(file, 'utf8').trim();
    const value = env[name];
    return value === undefined || value === '' ? undefined : value;
  };
  const out: Partial<NodeConnectionOptions> = {};
  const user = secret('NATS_USER');
  const pass = secret('NATS_PASSWORD');
  if (user) {
    out.user = user;
    if (pass !== undefined) out.pass = pass;
  }
  const token = secret('NATS_TOKEN');
  if (token) out.token = token;
  if (env.NATS_CREDS_FILE) {
    out.authenticator = credsAuthenticator(new Uint8Array(readFileSync(env.NATS_CREDS_FILE)));
  } else {
    const seed = secret('NATS_NKEY_SEED');
    if (seed) out.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  const tls: NonNullable<NodeConnectionOptions['tls']> = {};
  if (env.NATS_TLS_CA_FILE) tls.caFile = env.NATS_TLS_CA_FILE;
  if (env.NATS_TLS_CERT_FILE) tls.certFile = env.NATS_TLS_CERT_FILE;
  if (env.NATS_TLS_KEY_FILE) tls.keyFile = env.NATS_TLS_KEY_FILE;
  if (env.NATS_TLS_HANDSHAKE_FIRST === 'true') tls.handshakeFirst = true;
  if (Object.keys(tls).length > 0 || env.NATS_TLS === 'true') out.tls = tls;
  return out;
}

const SERVER_SCHEMES = new Set(['nats:', 'tls:', 'ws:', 'wss:']);

/**
 * The servers of a NATS_URL: one URL, or several separated by commas (the nodes of a cluster; the
 * client picks one and fails over to the others, and learns the rest of the cluster from the one it
 * reached). Entries may omit the scheme (`host:port`). Throws a RangeError naming the entry that is
 * not a server URL.
 */
export function natsServers(list: string): string[] {
  const entries = list.split(',').map((s) => s.trim());
  if (entries.length === 0 || entries.every((s) => s === '')) throw new RangeError('no NATS server given (e.g. nats://127.0.0.1:4222, comma-separated for several)');
  return entries.map((entry, i) => {
    const where = entries.length > 1 ? `server ${i + 1} of ${entries.length}` : 'the server';
    if (entry === '') throw new RangeError(`${where} is empty (a stray comma?)`);
    let url: URL;
    try {
      url = new URL(entry.includes('://') ? entry : `nats://${entry}`);
    } catch {
      throw new RangeError(`${where} (${redactUrl(entry)}) is not a URL like nats://host:4222`);
    }
    if (!SERVER_SCHEMES.has(url.protocol)) throw new RangeError(`${where} (${redactUrl(entry)}) has scheme ${url.protocol.slice(0, -1)}; use nats, tls, ws or wss`);
    if (!url.hostname) throw new RangeError(`${where} (${redactUrl(entry)}) names no host`);
    return entry;
  });
}

/** A server URL with its credentials, if any, masked: for logs and error messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/g, '//***@');
}

export interface ConnectBusOptions {
  /** One URL, several comma-separated (see natsServers), or a list, e.g. `nats://nats:4222`. */
  url: string | string[];
  /** The service name; the server shows it as the connection name (`nats server report connections`). */
  name: string;
  /** Pause between reconnect attempts. Default 2000 ms (plus the client's jitter). */
  reconnectWaitMs?: number;
  /** Keep retrying the first connect too, instead of failing at once. Default false: fail fast at start. */
  waitOnFirstConnect?: boolean;
  /** Anything else the client accepts (user/pass, tls, ...); overrides what `env` gives. */
  extra?: Partial<NodeConnectionOptions>;
  /**
   * Where credentials and TLS settings are read from (see natsAuthFromEnv). Default process.env;
   * pass `false` to read none.
   */
  env?: NodeJS.ProcessEnv | false;
  /** When given, connection status changes are logged to it. */
  logger?: BusLogger;
}

/**
 * Connects to NATS with reconnects that never give up: a service that lost its broker keeps trying
 * (its readiness probe reports it) instead of exiting into a crash loop.
 */
export async function connectBus(opts: ConnectBusOptions): Promise<NatsConnection> {
  const fromEnv = opts.env === false ? {} : natsAuthFromEnv(opts.env ?? process.env);
  const nc = await connect({
    ...fromEnv,
    ...opts.extra,
    servers: typeof opts.url === 'string' ? natsServers(opts.url) : opts.url,
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: opts.reconnectWaitMs ?? 2_000,
    waitOnFirstConnect: opts.waitOnFirstConnect ?? false,
    // Capturing an async stack for every request and publish costs a few percent of each service's CPU;
    // errors still carry their code and message.
    noAsyncTraces: true,
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
