import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on Linux). */
const USER_HZ = 100;

/** /proc/<pid>/stat's fields after the command name (field 2, which may hold spaces): index 0 is field 3. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (user + system) a process has used so far, in milliseconds, read from /proc. */
export function processCpuMs(pid: number): number {
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

/**
 * A process's own CPU time so far plus what its children that ended used (cutime and cstime: the
 * kernel adds a child's CPU to its parent's when the parent reaps it), in milliseconds.
 */
export function processTreeCpuMs(pid: number): number {
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / USER_HZ;
}

/** CPU used by each named process between `start()` and `stop()`. */
export class CpuMeter {
  private before = new Map<string, number>();

  constructor(private readonly pids: Map<string, number>) {}

  start(): void {
    this.before = new Map([...this.pids].map(([name, pid]) => [name, processCpuMs(pid)]));
  }

  stop(): Map<string, number> {
    return new Map([...this.pids].map(([name, pid]) => [name, processCpuMs(pid) - (this.before.get(name) ?? 0)]));
  }
}

/** Each process's CPU milliseconds divided by the messages that cost them, by name. */
export function perMessage(cpuMs: ReadonlyMap<string, number>, messages: number): Record<string, number> {
  return Object.fromEntries([...cpuMs].map(([name, ms]) => [name, ms / messages]));
}

/** Write system calls (write, writev, sendmsg, …) a process has made so far, from /proc/<pid>/io. */
export function processWriteCalls(pid: number): number {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/^syscw:\s*(\d+)/m.exec(io)?.[1] ?? NaN);
}

/** Every process whose command name is `comm` (e.g. all of a PostgreSQL server's backends). */
export function pidsNamed(comm: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry));
    } catch {
      // Gone since the listing.
    }
  }
  return pids;
}

/** The backing servers a message also costs, by command name; PostgreSQL is all its processes. */
const SERVERS = ['nats-server', 'redis-server', 'postgres'] as const;

/** What `SideMeter.stop` reports CPU for: the backing servers, then `bench` (this process: the load and the fakes). */
export const BESIDE_SERVICES = [...SERVERS, 'bench'] as const;

/**
 * CPU the backing servers (every process of each, on this machine) and this process used between
 * `start()` and `stop()`, and the write system calls each measured service made. On a machine shared
 * with other work the servers' figures include it.
 *
 * A server's processes come and go within a phase (PostgreSQL starts a backend per connection and a
 * pool closes idle ones). Each process is read with the CPU of its children that ended, so a backend
 * that exits mid-phase is not lost: its parent's count gains its whole CPU as it is reaped, and its
 * share from before the phase is what the start's reading of it subtracts.
 */
export class SideMeter {
  private before = { servers: new Map<string, number>(), self: 0, writes: new Map<string, number>() };

  constructor(private readonly services: Map<string, number>) {}

  private serverCpu(): Map<string, number> {
    return new Map(SERVERS.map((name) => [name, pidsNamed(name).reduce((sum, pid) => sum + safe(() => processTreeCpuMs(pid)), 0)]));
  }

  private writes(): Map<string, number> {
    return new Map([...this.services].map(([name, pid]) => [name, safe(() => processWriteCalls(pid))]));
  }

  start(): void {
    this.before = { servers: this.serverCpu(), self: selfCpuMs(), writes: this.writes() };
  }

  /** CPU ms of each server and of `bench` (this process), and write calls of each service. */
  stop(): { cpuMs: Map<string, number>; writeCalls: Map<string, number> } {
    const servers = this.serverCpu();
    const cpuMs = new Map([...servers].map(([name, ms]) => [name, ms - (this.before.servers.get(name) ?? 0)]));
    cpuMs.set('bench', selfCpuMs() - this.before.self);
    const writes = this.writes();
    return { cpuMs, writeCalls: new Map([...writes].map(([name, n]) => [name, n - (this.before.writes.get(name) ?? 0)])) };
  }
}

function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** A process that ended since it was listed counts nothing. */
function safe(read: () => number): number {
  try {
    return read();
  } catch {
    return 0;
  }
}
