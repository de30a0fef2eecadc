// `npm run reset`: deletes the data folder `npm start` keeps (.conveyor/, or CONVEYOR_HOME): the
// Postgres, NATS and Redis it ran, their data, and the logs. Refused while that `npm start` runs.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const home = path.resolve(process.env.CONVEYOR_HOME || path.join(root, '.conveyor'));
const pidFile = path.join(home, 'start.pid');

function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

if (!existsSync(home)) {
  console.log(`conveyor: nothing to reset (${home} does not exist)`);
} else if (existsSync(pidFile) && running(Number(readFileSync(pidFile, 'utf8')))) {
  console.error(`conveyor: npm start is running (pid ${readFileSync(pidFile, 'utf8').trim()}); stop it first (Ctrl-C)`);
  process.exitCode = 1;
} else {
  rmSync(home, { recursive: true, force: true });
  console.log(`conveyor: deleted ${home}`);
}
