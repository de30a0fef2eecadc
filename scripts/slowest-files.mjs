// A test reporter that prints, once the run ends, the test files that took longest: where the
// suite's time goes, so the next person knows what to make faster. Time per file is the sum of its
// top-level tests and suites.
import path from 'node:path';

// CONVEYOR_TEST_SLOWEST=all (or a number) shows more.
const SHOWN = process.env.CONVEYOR_TEST_SLOWEST === 'all' ? Infinity : Number(process.env.CONVEYOR_TEST_SLOWEST) || 20;

export default async function* slowestFiles(source) {
  const started = Date.now();
  const perFile = new Map();
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0 || !event.data.file) continue;
    perFile.set(event.data.file, (perFile.get(event.data.file) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  const rows = [...perFile].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
  const total = [...perFile.values()].reduce((a, b) => a + b, 0);
  yield `# the run took ${((Date.now() - started) / 60_000).toFixed(1)} min\n`;
  yield `# the ${rows.length} slowest of ${perFile.size} test files (${(total / 60_000).toFixed(1)} min in all):\n`;
  for (const [file, ms] of rows) yield `#   ${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}\n`;
}
