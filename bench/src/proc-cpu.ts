import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on Linux). */
const USER_HZ = 100;

/** CPU time (user + system) a process has used so far, in milliseconds, read from /proc. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; fields after it are counted from its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / USER_HZ;
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
