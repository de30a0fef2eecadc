// Preloaded into a service process by bench/runner (`--import <this file>`): on SIGUSR2 it prints the
// process's memory and its event-loop delay since the previous signal as one line on stdout, which the
// harness collects with the service's logs. With --expose-gc it prints a second line after a full
// garbage collection (the live heap).
import { monitorEventLoopDelay } from 'node:perf_hooks';

export const MEMORY_LINE = 'BENCH_MEMORY ';

const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();

process.on('SIGUSR2', () => {
  const line = (phase: string) => {
    const m = process.memoryUsage();
    const loop = { p50Ms: delay.percentile(50) / 1e6, p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6 };
    process.stdout.write(`${MEMORY_LINE}${JSON.stringify({ phase, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, loop })}\n`);
  };
  line('now');
  delay.reset();
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    line('after-gc');
  }
});
