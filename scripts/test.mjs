// The one test command: set up what is missing, then run every compiled test file with Node's runner.
// Unit tests sit next to their code (`*.test.ts`); multi-process tests live under test/.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './ensure-built.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
ensureBuilt();

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'generated') continue;
    if (statSync(full).isDirectory()) out.push(...testFiles(full));
    else if (name.endsWith('.test.js')) out.push(full);
  }
  return out;
}

const filter = process.argv.slice(2);
// Packages sit one level down (libs/bus), platform packages two (libs/platforms/telegram).
const packageDirs = (dir, depth) =>
  readdirSync(dir).flatMap((p) => {
    const full = path.join(dir, p);
    if (!statSync(full).isDirectory()) return [];
    return [full, ...(depth > 1 && p === 'platforms' ? packageDirs(full, depth - 1) : [])];
  });
const dists = ['libs', 'apps', 'services']
  .flatMap((top) => packageDirs(path.join(root, top), 2).map((p) => path.join(p, 'dist')))
  .concat([path.join(root, 'test', 'dist')])
  .filter((d) => { try { return statSync(d).isDirectory(); } catch { return false; } });
let files = dists.flatMap(testFiles).sort();
if (filter.length) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) { console.error('no test files found'); process.exit(1); }

// Test files run CONVEYOR_TEST_CONCURRENCY at a time (default 2: a multi-process suite spends most
// of its time waiting on its services, so a second file fills the gaps). The usual report (spec on a
// terminal, TAP otherwise), then the slowest files, then the service logs of every file that failed.
const reporters = [
  `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`, '--test-reporter-destination=stdout',
  `--test-reporter=${path.join(root, 'scripts', 'slowest-files.mjs')}`, '--test-reporter-destination=stdout',
  `--test-reporter=${path.join(root, 'scripts', 'failed-service-logs.mjs')}`, '--test-reporter-destination=stdout',
];
// The services the tests start write their whole logs here; kept when a test failed, for reading.
const serviceLogs = process.env.CONVEYOR_TEST_SERVICE_LOGS ?? mkdtempSync(path.join(tmpdir(), 'conveyor-test-logs-'));
const concurrency = Number(process.env.CONVEYOR_TEST_CONCURRENCY) || 2;
// A run starts hundreds of Node processes (each test file, each service a test starts) that
// compile the same modules; V8's compile cache, shared by all of them, spares most of that. Node
// checks each entry against the source it was made from, so a rebuilt file is compiled afresh.
const compileCache = process.env.NODE_COMPILE_CACHE ?? path.join(root, 'node_modules', '.cache', 'conveyor-test-compile');
const res = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', ...reporters, ...files], {
  cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test', NODE_COMPILE_CACHE: compileCache, CONVEYOR_TEST_SERVICE_LOGS: serviceLogs },
});
if (res.status === 0 && !process.env.CONVEYOR_TEST_SERVICE_LOGS) rmSync(serviceLogs, { recursive: true, force: true });
process.exit(res.status ?? 1);
