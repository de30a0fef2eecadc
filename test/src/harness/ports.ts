import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * The ports handed out here lie below the OS's ephemeral range (Linux: ip_local_port_range, 32768
 * and up by default). A port the OS handed out and that was closed again can be taken by any outgoing
 * connection (a client of NATS, Redis or Postgres) before the service it was meant for binds it; a
 * port below that range is only ever taken by a process asking for it by number.
 */
function portWindow(): { low: number; high: number } {
  let ephemeralLow = 32_768;
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // Not Linux: the IANA dynamic range starts higher still; the default stands.
  }
  const high = Math.min(ephemeralLow, 65_536) - 1;
  return { low: Math.max(10_000, high - 12_767), high };
}

const WINDOW = portWindow();
/** Ports this process handed out: never handed out twice, so two services of one test never share one. */
const handedOut = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port no outgoing connection will take (see portWindow), at most `high`. */
async function pickPort(high: number = WINDOW.high): Promise<number> {
  for (let tries = 0; tries < 1_000; tries++) {
    const port = WINDOW.low + Math.floor(Math.random() * (high - WINDOW.low + 1));
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port in ${WINDOW.low}–${high} after 1000 tries`);
}

/** A free port for a service or server a test starts. */
export function freePort(): Promise<number> {
  return pickPort();
}

/**
 * `count` free ports, no two the same. With `pairedOffset`, each port's `port + pairedOffset` is free
 * too (a Redis Cluster node's bus listens there), and below the ephemeral range as well.
 */
export async function distinctFreePorts(count: number, options: { pairedOffset?: number } = {}): Promise<number[]> {
  const offset = options.pairedOffset ?? 0;
  if (WINDOW.high - offset < WINDOW.low) throw new Error(`no room for ports paired at +${offset} in ${WINDOW.low}–${WINDOW.high}`);
  const taken: number[] = [];
  for (let tries = 0; taken.length < count; tries++) {
    if (tries > 1_000) throw new Error(`no ${count} free ports${offset ? ` with port + ${offset} free` : ''} after 1000 tries`);
    const p = await pickPort(WINDOW.high - offset);
    if (offset === 0) taken.push(p);
    else if (!handedOut.has(p + offset) && (await canListen(p + offset))) {
      handedOut.add(p + offset);
      taken.push(p);
    }
  }
  return taken;
}
