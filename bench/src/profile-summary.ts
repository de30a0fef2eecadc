// Summarises V8 CPU profiles (`--cpu-prof` output): self time per package and the top functions.
//
// Usage: node bench/dist/profile-summary.js <folder of .cpuprofile files> [top=12]
//
// A `window.json` in the folder ({ startUs, endUs } on the monotonic clock, as `process.hrtime` reads
// it and V8 stamps its samples) limits the summary to that phase, leaving start-up and other phases out.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A phase on the monotonic clock, in microseconds. */
export interface ProfileWindow {
  startUs: number;
  endUs: number;
  /** CPU time each service used in the phase, by instance, as `/proc` counted it. */
  cpuMs?: Record<string, number>;
}

/** The package a script belongs to: the npm package, the workspace (libs/x, services/x), node internals, or a V8 marker. */
export function packageOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const ws = url.match(/\/(libs|services|bench|test)\/([^/]+)\//);
  if (ws) return `${ws[1]}/${ws[2]}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url;
}

export interface ProfileShares {
  totalMs: number;
  packages: [string, number][];
  /** Self time of Node internals, native code and GC charged to the nearest package up the stack that called them. */
  callers: [string, number][];
  functions: [string, number][];
}

const isRuntime = (p: string) => p.startsWith('node:') || p.startsWith('(');

export function summarise(profile: CpuProfile, window?: ProfileWindow): ProfileShares {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const callerOf = (id: number): string => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      const p = packageOf(n.callFrame.url, n.callFrame.functionName);
      if (!isRuntime(p) && n.callFrame.functionName !== '(root)') return p;
    }
    return '(runtime, no caller)';
  };
  const callers = new Map<string, number>();
  const pkg = new Map<string, number>();
  const fn = new Map<string, number>();
  let total = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window.startUs || at > window.endUs)) continue;
    const node = byId.get(profile.samples[i]);
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    if (!node || node.callFrame.functionName === '(idle)' || node.callFrame.functionName === '(program)') continue;
    total += dt;
    const p = packageOf(node.callFrame.url, node.callFrame.functionName);
    pkg.set(p, (pkg.get(p) ?? 0) + dt);
    const c = isRuntime(p) ? callerOf(node.id) : p;
    callers.set(c, (callers.get(c) ?? 0) + dt);
    const f = `${node.callFrame.functionName || '(anonymous)'} ${p}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ''}`;
    fn.set(f, (fn.get(f) ?? 0) + dt);
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { totalMs: total, packages: sorted(pkg), callers: sorted(callers), functions: sorted(fn) };
}

/** One block of text per profile in the folder; file names start with the service name. */
export function summariseFolder(dir: string, top = 12): string {
  const out: string[] = [];
  const files = readdirSync(dir);
  const window = files.includes('window.json') ? (JSON.parse(readFileSync(path.join(dir, 'window.json'), 'utf8')) as ProfileWindow) : undefined;
  if (window) out.push(`(samples of the measured phase only: ${((window.endUs - window.startUs) / 1e6).toFixed(1)} s)`);
  for (const file of files.filter((f) => f.endsWith('.cpuprofile')).sort()) {
    const s = summarise(JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile, window);
    const pct = (ms: number) => `${((100 * ms) / s.totalMs).toFixed(1).padStart(5)} %`;
    const measured = window?.cpuMs?.[file.replace(/\.cpuprofile$/, '')];
    // V8 samples on wall-clock ticks: a thread the kernel took off the CPU is sampled where it stopped,
    // most often in a socket write (writing wakes the reader). On a busy machine the samples outnumber
    // the CPU time, and the excess sits in `writeBuffer`/`writev`/`writeUtf8String`.
    out.push(`== ${file}: ${(s.totalMs / 1000).toFixed(1)} s sampled busy (idle excluded)${measured === undefined ? '' : `, ${(measured / 1000).toFixed(1)} s of CPU by /proc: samples taken off the CPU are in the shares, mostly in socket writes`}`);
    out.push('  packages (self time):');
    for (const [name, ms] of s.packages.slice(0, top)) out.push(`    ${pct(ms)}  ${name}`);
    out.push('  packages, with the runtime time they caused:');
    for (const [name, ms] of s.callers.slice(0, top)) out.push(`    ${pct(ms)}  ${name}`);
    out.push('  functions (self time):');
    for (const [name, ms] of s.functions.slice(0, top)) out.push(`    ${pct(ms)}  ${name}`);
  }
  return out.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: profile-summary <folder of .cpuprofile files> [top]');
    process.exit(2);
  }
  console.log(summariseFolder(dir, Number(process.argv[3] ?? 12)));
}
