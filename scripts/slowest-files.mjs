// A test reporter that prints, once the run ends, the test files that took longest: where the
// suite's time goes, so the next person knows what to make faster. Time per file is the sum of its
// top-level tests and suites.
import path from 'node:path';

// CONVEYOR_TEST_SLOWEST=all (or a number) shows more.
const SHOWN = process.env.CONVEYOR_TEST_SLOWEST === 'all' ? Infinity : Number(process.env.CONVEYOR_TEST_SLOWEST) || 20;
// A file whose process runs this much longer than its tests has a cause worth finding.
const OUTSIDE_SHOWN_MS = 3_000;

export default async function* slowestFiles(source) {
  const started = Date.now();
  const perFile = new Map();
  // The runner reports each file itself as a test named after it: dequeued when its process starts,
  // complete when the process has exited. What lies between and in none of its tests is start-up
  // (module loading) and the process outliving its tests (an open handle, a pending timer).
  const lifetimes = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    if ((event.type === 'test:dequeue' || event.type === 'test:complete') && path.resolve(event.data.name) === file) {
      const life = lifetimes.get(file) ?? {};
      life[event.type === 'test:dequeue' ? 'start' : 'end'] = Date.now();
      lifetimes.set(file, life);
      continue;
    }
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue;
    perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  const rows = [...perFile].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
  const total = [...perFile.values()].reduce((a, b) => a + b, 0);
  yield `# the run took ${((Date.now() - started) / 60_000).toFixed(1)} min\n`;
  yield `# the ${rows.length} slowest of ${perFile.size} test files (${(total / 60_000).toFixed(1)} min in all):\n`;
  for (const [file, ms] of rows) yield `#   ${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}\n`;
  // A file whose tests are declared in a module it imports has them counted under that module, so
  // its own time outside them is not known: such files are left out.
  const outside = [...lifetimes]
    .filter(([file, life]) => life.start !== undefined && life.end !== undefined && perFile.has(file))
    .map(([file, life]) => [file, life.end - life.start - perFile.get(file)]);
  const long = outside.filter(([, ms]) => ms >= OUTSIDE_SHOWN_MS).sort((a, b) => b[1] - a[1]);
  const sum = outside.reduce((a, [, ms]) => a + ms, 0);
  yield `# outside any test (process start-up and exit) in ${outside.length} files: ${(sum / 60_000).toFixed(1)} min; ${long.length} with ${OUTSIDE_SHOWN_MS / 1000} s or more:\n`;
  for (const [file, ms] of long.slice(0, SHOWN)) yield `#   ${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}\n`;
}
