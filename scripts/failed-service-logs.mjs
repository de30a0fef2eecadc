// A test reporter that prints, once the run ends, the last lines every service process of a failed
// test file wrote: a multi-process test that failed on a loaded machine (a CI run) can then be read
// without running it again. The test harness keeps each file's service logs whole in a folder of
// CONVEYOR_TEST_SERVICE_LOGS (test/src/harness/services.ts names it the same way).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const LOGS = process.env.CONVEYOR_TEST_SERVICE_LOGS;
// Enough for the failure and what led to it; the whole logs stay in the folder.
const LINES_PER_PROCESS = Number(process.env.CONVEYOR_TEST_LOG_LINES) || 80;

/** The folder of one test file's service logs (as `serviceLogFolder` in the harness). */
const folderOf = (testFile) => encodeURIComponent(path.resolve(testFile));

function tail(file, lines) {
  const text = readFileSync(file, 'utf8');
  const all = text.split('\n');
  if (all.at(-1) === '') all.pop();
  return { shown: all.slice(-lines), total: all.length };
}

export default async function* failedServiceLogs(source) {
  const failed = new Set();
  for await (const event of source) {
    // A file that failed to load or exited early is reported as a failed test named after the file.
    if (event.type === 'test:fail' && event.data?.file) failed.add(event.data.file);
  }
  if (!LOGS || failed.size === 0) return;
  for (const file of [...failed].sort()) {
    const dir = path.join(LOGS, folderOf(file));
    let logs;
    try {
      logs = readdirSync(dir).sort();
    } catch {
      continue; // the file started no service
    }
    yield `# service logs of ${path.relative(process.cwd(), file)}, which failed (whole logs in ${dir}):\n`;
    for (const name of logs) {
      const { shown, total } = tail(path.join(dir, name), LINES_PER_PROCESS);
      yield `# --- ${name}: the last ${shown.length} of ${total} lines\n`;
      for (const line of shown) yield `#   ${line}\n`;
    }
  }
}
