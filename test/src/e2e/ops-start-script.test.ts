import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topology } from '@conveyor/contracts';
import { sign } from '@conveyor/http-bot';
import { createTempDatabase, type TempDatabase } from '@conveyor/persistence/testing';
import { startCallbackReceiver, startFakeOpenAI, type CallbackReceiver, type FakeOpenAI } from '../fakes/index.js';
import { uniqueName } from '../harness/ids.js';
import { freePort } from '../harness/ports.js';
import { ALL_SERVICES, repoRoot, type ServiceName } from '../harness/services.js';

import { deleteStreams } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';

/** The example bot of conveyor.example.yaml, which `npm start` loads. */
const EXAMPLE_BOT = '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34';
const INBOUND_SECRET = 'start-script-secret';

/**
 * Every process whose environment carries this run's subject prefix: npm, its shell, the start script
 * and the services, also those left behind when their parent is gone. Read from /proc (Linux).
 */
function processesOfRun(prefix: string): number[] {
  const marker = `CONVEYOR_SUBJECT_PREFIX=${prefix}`;
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      // A zombie's environment reads empty: it is gone as far as this test is concerned.
      return readFileSync(`/proc/${d}/environ`, 'latin1').split('\0').includes(marker) ? [Number(d)] : [];
    } catch {
      return [];
    }
  });
}

interface StartedConveyor {
  child: ChildProcess;
  /** stdout and stderr, colour codes removed. */
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * `npm start` (scripts/start.mjs) for one test: its own subject prefix, database, ports and fakes. The
 * tree is built already, so install and build are skipped; the setup step (migrate, load the example
 * conveyor.yaml) runs on a temporary database.
 */
/** What `npm start` runs: the message path, the gateway, the admin API and (bubblewrap is installed here) the sandbox. */
const STARTED: ServiceName[] = [...ALL_SERVICES, 'gateway', 'admin', 'sandbox'];

describe('npm start', () => {
  let db: TempDatabase;
  let llm: FakeOpenAI;
  let callbacks: CallbackReceiver;
  const runs: { prefix: string; child: ChildProcess }[] = [];

  const home = mkdtempSync(path.join(tmpdir(), 'conveyor-start-'));

  before(async () => {
    [db, llm, callbacks] = await Promise.all([
      createTempDatabase({ migrated: false }),
      startFakeOpenAI({ apiKey: 'start-script-llm-key' }),
      startCallbackReceiver({ secret: INBOUND_SECRET }),
    ]);
  });

  // Whatever a test left running (also when it failed half-way) is killed by its pid.
  afterEach(async () => {
    for (const { prefix } of runs.splice(0)) {
      for (const pid of processesOfRun(prefix)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      await deleteStreams(topology(prefix)).catch(() => undefined);
    }
  });

  after(async () => {
    await Promise.all([llm?.close(), callbacks?.close()]);
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  async function start(how: 'npm' | 'node', ports: Record<string, number>): Promise<StartedConveyor & { prefix: string; ports: Record<string, number> }> {
    const prefix = uniqueName('t');
    // --verbose: every service's log on the terminal too, which these tests read (the quiet default is ops-start-bare's).
    const [command, args] = how === 'npm' ? ['npm', ['start', '--silent', '--', '--verbose']] : [process.execPath, [path.join(repoRoot, 'scripts/start.mjs'), '--verbose']];
    const child = spawn(command, args, {
      cwd: repoRoot,
      env: {
        ...process.env,
        CONVEYOR_SUBJECT_PREFIX: prefix,
        CONVEYOR_START_SKIP_BUILD: '1',
        CONVEYOR_HOME: home,
        CONVEYOR_CONFIG: path.join(repoRoot, 'conveyor.example.yaml'),
        DATABASE_URL: db.url,
        HOST: '127.0.0.1',
        ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [`${name.toUpperCase()}_PORT`, String(port)])),
        LLM_BASE_URL: llm.url,
        LLM_API_KEY: 'start-script-llm-key',
        HTTP_BOT_INBOUND_SECRET: INBOUND_SECRET,
        HTTP_BOT_CALLBACK_URL: `${callbacks.url}/callback`,
        SHUTDOWN_GRACE_SECONDS: '15',
        LOG_LEVEL: 'info',
        OTEL_TRACES_EXPORTER: 'none',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so the test can signal the whole group as a terminal or supervisor does.
      detached: true,
    });
    runs.push({ prefix, child });
    let text = '';
    child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { child, prefix, ports, exited, output: () => text.replace(/\x1b\[\d+m/g, '') };
  }

  async function freePorts(): Promise<Record<string, number>> {
    return Object.fromEntries(await Promise.all(STARTED.map(async (name) => [name, await freePort()] as const)));
  }

  async function waitForAllReady(run: StartedConveyor & { ports: Record<string, number> }): Promise<void> {
    for (const [name, port] of Object.entries(run.ports)) {
      await waitUntil(`${name} ready`, async () => {
        if (run.child.exitCode !== null) throw new Error(`start script exited with ${run.child.exitCode}:\n${run.output().slice(-3000)}`);
        return (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200;
      }, 120_000, 200);
    }
  }

  /** How each service ended, from the start script's `<name> | exited (<code or signal>)` lines. */
  function exits(output: string): Record<string, string> {
    return Object.fromEntries([...output.matchAll(/^(\w+)\s*\| exited \((\w+)\)$/gm)].map((m) => [m[1], m[2]]));
  }

  test('SIGTERM to npm drains the seven services, and npm returns once they have stopped', async () => {
    const run = await start('npm', await freePorts());
    await waitForAllReady(run);
    assert.ok(processesOfRun(run.prefix).length >= STARTED.length + 2, `npm, the start script and ${STARTED.length} services`);
    assert.doesNotMatch(run.output(), /not starting the sandbox/);

    // Where the admin API is and how to sign in; on a first start without a password, the setup link.
    const admin = await waitUntil('the admin line', () => /conveyor: admin API at (http:\/\/\S+\/api\/v1)/.exec(run.output()) ?? undefined, 30_000);
    assert.equal(admin[1], `http://127.0.0.1:${run.ports.admin}/api/v1`);
    assert.match(run.output(), new RegExp(`admin\\s*\\|.*finish setup at http://127\\.0\\.0\\.1:${run.ports.admin}/setup#token=cvsetup_`));
    // The setup link opens the web console, which the admin service serves.
    const setupPage = await fetch(`http://127.0.0.1:${run.ports.admin}/setup`);
    assert.equal(setupPage.status, 200);
    assert.match(await setupPage.text(), /<div id="root"><\/div>/);

    // The quickstart's web chat: switched on with a token made for the run, printed in the link.
    const link = await waitUntil('the web chat link', () => /conveyor: web chat at (http:\/\/\S+\/chat)#token=(\S+)/.exec(run.output()) ?? undefined, 30_000);
    assert.equal(link[1], `http://127.0.0.1:${run.ports.ingress}/chat`);
    const bots = `http://127.0.0.1:${run.ports.ingress}/chat/api/bots`;
    assert.equal((await fetch(bots)).status, 401);
    const listed = await fetch(bots, { headers: { authorization: `Bearer ${decodeURIComponent(link[2])}` } });
    assert.equal(listed.status, 200);
    assert.ok(((await listed.json()) as { bots: { id: string }[] }).bots.some((b) => b.id === EXAMPLE_BOT), 'the example bot is listed');

    process.kill(run.child.pid!, 'SIGTERM');
    assert.equal(await run.exited, 0, run.output().slice(-3000));
    assert.deepEqual(exits(run.output()), Object.fromEntries(STARTED.map((n) => [n, '0'])), run.output().slice(-3000));
    await waitUntil('no process of this run is left', () => processesOfRun(run.prefix).length === 0, 30_000);
  });

  test('a second SIGTERM to the whole group does not kill a service that is draining', async () => {
    const run = await start('node', await freePorts());
    await waitForAllReady(run);
    // A run the runner is busy with while it drains: the model answers only after a few seconds.
    llm.setDefault({ text: 'answered while draining', delayFirstTokenMs: 4_000 });
    const calls = llm.requests.length;
    const body = Buffer.from(JSON.stringify({ session_id: `drain-${run.prefix}`, message: [{ type: 'Plain', text: 'hello' }] }));
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await fetch(`http://127.0.0.1:${run.ports.ingress}/bots/${EXAMPLE_BOT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': sign(INBOUND_SECRET, ts, body) },
      body,
    });
    assert.equal(res.status, 202, await res.text());
    await waitUntil('the model was called', () => llm.requests.length > calls, 30_000);

    // As a terminal's Ctrl-C (twice) or a supervisor that signals the process group does.
    process.kill(-run.child.pid!, 'SIGTERM');
    await waitUntil('the runner drains', () => /runner\s*\|.*runner draining/.test(run.output()), 10_000);
    process.kill(-run.child.pid!, 'SIGTERM');

    assert.equal(await run.exited, 0, run.output().slice(-3000));
    assert.deepEqual(exits(run.output()), Object.fromEntries(STARTED.map((n) => [n, '0'])), run.output().slice(-3000));
    assert.match(run.output(), /runner\s*\|.*runner stopped/);
    await waitUntil('no process of this run is left', () => processesOfRun(run.prefix).length === 0, 30_000);
  });

  test('a port in use stops it at once with a message naming the port', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const busy = (holder.address() as net.AddressInfo).port;
      const run = await start('node', { ...(await freePorts()), orchestrator: busy });
      assert.equal(await run.exited, 1, run.output());
      assert.match(run.output(), new RegExp(`port ${busy} \\(orchestrator\\) is already in use.*ORCHESTRATOR_PORT`));
      assert.doesNotMatch(run.output(), /\| exited/, 'no service was started');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
