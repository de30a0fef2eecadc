// What ships must start: every workload of a target (the dev or prod overlay, the compose file),
// started from its image's tree with the command, environment, files and user its artifacts give it,
// in a network namespace of its own, must pass its own probes within its own thresholds, and answer a
// message end to end; the sandbox role must answer a runner's call, running a command under bubblewrap. One test file per target (conformance-<target>.test.ts), each within the
// runner's per-file time limit.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { repoRoot } from '../harness/services.js';
import { targetHosts, targetWorkloads, type ConformanceReport, type Target } from './conformance.js';

/** Creates a network namespace whose hosts file resolves every name the target's workloads use, runs the check in it. */
async function runInNamespace(target: Target): Promise<ConformanceReport> {
  const ns = `conveyor-conf-${target}-${randomBytes(3).toString('hex')}`;
  const hostsDir = path.join('/etc/netns', ns);
  const dir = mkdtempSync(path.join(tmpdir(), 'conveyor-conformance-'));
  const out = path.join(dir, 'report.json');
  try {
    execFileSync('ip', ['netns', 'add', ns]);
    mkdirSync(hostsDir, { recursive: true });
    // `ip netns exec` binds /etc/netns/<ns>/hosts over /etc/hosts: the cluster's DNS for this run.
    writeFileSync(path.join(hostsDir, 'hosts'), targetHosts(targetWorkloads(target)));
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '--enable-source-maps', path.join(repoRoot, 'test/dist/deploy/conformance.js'), target, out], { stdio: ['ignore', 'inherit', 'inherit'], cwd: repoRoot });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, `the conformance check of ${target} itself failed (exit ${code})`);
    return JSON.parse(readFileSync(out, 'utf8')) as ConformanceReport;
  } finally {
    try {
      execFileSync('ip', ['netns', 'del', ns]);
    } catch {
      // not created
    }
    rmSync(hostsDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

function describeContainer(c: ConformanceReport['containers'][number]): string {
  return `${c.workload}/${c.container} (${c.image}${c.stage ? `, stage ${c.stage}` : ''}, command ${JSON.stringify(c.argv)}): ${c.problem ?? 'ok'}; started in ${c.startedSeconds ?? '-'} s (budget ${c.budgetSeconds} s, allowed ${c.allowedSeconds ?? '-'} s), ready in ${c.readySeconds ?? '-'} s; exits ${JSON.stringify(c.exits)}; last lines:\n  ${c.logTail.slice(-12).join('\n  ')}`;
}

export function describeConformance(target: Target): void {
  describe(`deploy conformance: ${target}`, () => {
    let report: Promise<ConformanceReport> | undefined;
    const get = () => (report ??= runInNamespace(target));

    test('the suite itself ran: its own backends started, every workload was started', async () => {
      const r = await get();
      assert.deepEqual(r.problems, [], r.problems.join('\n'));
      assert.ok(r.workloads.length >= 6, `${r.workloads.length} workloads`);
      const started = new Set(r.containers.map((c) => c.workload));
      for (const w of r.workloads) if (!/jaeger|otel-collector/.test(w.name)) assert.ok(started.has(w.name), `${w.name} was started`);
    });

    test('every workload (Conveyor\'s, and the NATS, Redis, Postgres and fakes the target ships) passes its startup and readiness probes within its manifest\'s thresholds, and keeps running', async () => {
      const r = await get();
      const shipped = new Set(r.workloads.map((w) => w.name));
      const conveyor = r.containers.filter((c) => c.stage !== 'migrate' && shipped.has(c.workload) && !/^otel|^jaeger/.test(c.image));
      assert.ok(conveyor.filter((c) => c.stage).length >= 6, `Conveyor containers: ${conveyor.map((c) => c.workload).join(', ')}`);
      const failures = conveyor.filter((c) => c.problem || c.readySeconds === undefined || (c.startedSeconds ?? Infinity) > (c.allowedSeconds ?? c.budgetSeconds));
      assert.deepEqual(failures.map((c) => c.workload), [], failures.map(describeContainer).join('\n\n'));
      // Started in any order, a service may exit until what it needs is up (the kubelet restarts it),
      // but never once it has been ready.
      const crashed = conveyor.filter((c) => c.crashesAfterReady > 0);
      assert.deepEqual(crashed.map((c) => c.workload), [], crashed.map(describeContainer).join('\n\n'));
    });

    test('the migrations and configuration load finish successfully before the services need them', async () => {
      const r = await get();
      const migrate = r.containers.filter((c) => c.stage === 'migrate');
      assert.ok(migrate.length >= 1, 'a migrate container runs');
      for (const m of migrate) assert.equal(m.exits[0]?.code, 0, describeContainer(m));
    });

    test('a message sent to the example bot is answered through every hop', async () => {
        const r = await get();
        assert.ok(r.message, 'the target ships the fakes and an ingress');
        assert.equal(r.message.status, 202, JSON.stringify(r.message));
        assert.match(r.message.answer ?? '', /^Echo: conformance /, r.message.problem);
    });

    test('the sandbox role starts from the target and answers a runner\'s call over NATS: a command run under bubblewrap, the file it wrote read back from the stored workspace', async () => {
      const r = await get();
      assert.ok(r.workloads.some((w) => w.name === 'sandbox'), `the target ships the sandbox: ${r.workloads.map((w) => w.name).join(', ')}`);
      const sandbox = r.containers.find((c) => c.workload === 'sandbox');
      assert.equal(sandbox?.stage, 'sandbox', 'built from the Dockerfile\'s sandbox stage');
      const s = r.sandbox;
      assert.ok(s, 'the sandbox was called');
      assert.equal(s.problem, undefined, `${s.problem}\n${sandbox ? describeContainer(sandbox) : ''}`);
      assert.equal(s.user, 'runner', 'asked as the runner, the one role the NATS permissions let ask it');
      assert.ok(s.exec, 'exec answered');
      assert.deepEqual({ exitCode: s.exec.exitCode, stdout: s.exec.stdout }, { exitCode: 0, stdout: 'ok\n' }, s.exec.stderr);
      assert.ok(s.exec.revision >= 1, 'the workspace the command changed was stored');
      assert.deepEqual(s.read, { text: 'ok', revision: s.exec.revision }, 'the file read back, at the stored revision');
    });

    if (target === 'prod') {
      test('the NATS cluster the overlay ships forms, and the services keep NATS_STREAM_REPLICAS copies of their streams on it', async () => {
        const r = await get();
        const c = r.natsCluster;
        assert.ok(c, 'prod ships a NATS cluster');
        const names = c.nodes.map((n) => n.serverName).sort();
        assert.deepEqual(names, c.nodes.map((n) => n.pod).sort(), `each node's server name is its pod's: ${JSON.stringify(c.nodes)}`);
        assert.equal(c.nodes.length, 3, 'three nodes');
        for (const n of c.nodes) assert.deepEqual(n.routesTo, names.filter((x) => x !== n.serverName), `${n.pod} routes to every other node (${c.problem ?? ''})`);
        assert.ok(c.metaLeader && names.includes(c.metaLeader), `the nodes agree on a JetStream meta leader: ${c.metaLeader} (${c.problem ?? ''})`);
        assert.equal(c.metaClusterSize, 3);
        assert.equal(c.streamReplicasSetting, '3', 'the services are given NATS_STREAM_REPLICAS=3');
        assert.ok(c.stream, c.problem);
        assert.equal(c.stream.numReplicas, 3, `${c.stream.name}: num_replicas`);
        assert.equal(c.stream.replicas.length, 2, `${c.stream.name}: two followers besides the leader ${c.stream.leader}`);
        assert.deepEqual([c.stream.leader, ...c.stream.replicas].sort(), names, `${c.stream.name}: one copy on each node`);
      });
    }

    // prod samples a fifth of the traces: one message proves nothing there (its resolved environment is checked in k8s.test.ts).
    if (target !== 'prod') {
      test('traces reach the collector with the environment and each instance\'s id', async () => {
        const r = await get();
        assert.ok(r.spans && r.spans.count > 0, 'spans were exported');
        assert.deepEqual(r.spans.environments, [target], 'deployment.environment.name survives each workload\'s own settings');
        assert.ok(r.spans.services.length >= 4, `spans of ${r.spans.services.join(', ')}`);
        if (target === 'dev') assert.ok(r.spans.instanceIds.every((id) => id.endsWith('-conformance')), `service.instance.id is the pod name: ${r.spans.instanceIds.join(', ')}`);
        else assert.equal(r.spans.instanceIds.length, r.spans.services.length, 'one instance id per process');
      });
    }
  });
}
