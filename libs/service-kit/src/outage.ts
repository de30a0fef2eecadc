import { someCause } from '@conveyor/bus';
import { DATABASE_UNAVAILABLE_CODES } from '@conveyor/persistence';
/**
 * Whether an error means a dependency is down for a moment rather than that the work is wrong: the
 * consume loop then retries the message in place instead of spending its deliveries. Classified by
 * error names and codes (never by message text), following `cause` chains.
 */
const OUTAGE_NAMES = new Set([
  // ioredis: a command failed while the connection was being re-established.
  'MaxRetriesPerRequestError',
  // @nats-io: the broker did not answer or the connection is being re-established.
  'TimeoutError',
  'ClosedConnectionError',
  'ConnectionError',
  'NoRespondersError',
  'RequestError',
]);

const OUTAGE_CODES = new Set([
  // Sockets, name resolution, and Postgres connection exceptions or an instance shutting down or starting.
  ...DATABASE_UNAVAILABLE_CODES,
  // Prisma: database unreachable, connection closed, pool timeout.
  'P1001', 'P1002', 'P1017', 'P2024',
]);

export function isDependencyOutage(err: unknown): boolean {
  return someCause(err, ({ name, code }) =>
    (typeof name === 'string' && OUTAGE_NAMES.has(name)) || (typeof code === 'string' && OUTAGE_CODES.has(code)));
}
