// npm run chaos -- [trials per fault=50] [fault ...] [--unreplicated-ms=N] [--previous=DIR]
//
// --previous: the root of a built checkout of an earlier release (git worktree add DIR <rev>; npm ci
// and node scripts/ensure-built.mjs in DIR). Adds the `upgrade` fault: every replica starts on that
// release, then a rolling deployment replaces them with this tree's while replies stream, the first
// replica of every role before the second, so old and new replicas of every role run side by side.
// Its sessions keep talking through the whole deployment (each waits for a reply before the next).
// --unreplicated-ms: in redis-sentinel trials, the replica misses the master's last N ms of writes
// (at most 500), so the failover surely rolls Redis back (TrialOptions.unreplicatedMs).
//
// The chaos suite: the whole system with two replicas of every role on a NATS and a Redis of its own,
// a streaming fake model and a callback receiver. Each trial sends messages from several sessions and,
// while the replies stream, SIGKILLs one replica of a role (then restarts it), SIGKILLs the broker and
// restarts it on its store after 3 s, restarts Redis with its data lost, or restarts every replica with
// SIGTERM one after another (a rolling deployment). `nats-node` runs on a 3-node NATS cluster with every
// stream at R3: it SIGKILLs the leader of the runs or events stream or a follower, sends a message while
// the node is away, and restarts the node wiped or on its store (see ChaosRig). `redis-sentinel` runs on a
// Redis master, a replica and three Sentinels: it SIGKILLs the master while replies stream, lets the
// Sentinels fail over, and restarts the old master empty (they make it a replica). Prints one row per fault.
import path from 'node:path';
import { ALL_FAULTS, ChaosRig, CLUSTER_FAULTS, DEFAULT_TRIAL, failoverLine, faultViolations, nodeFaultLine, SANDBOX_FAULTS, SENTINEL_FAULTS, UPGRADE_FAULTS, type Fault, type TrialResult } from '@conveyor/test';
import { percentile } from './stats.js';

const args = process.argv.slice(2);
const trials = Number(args.find((a) => /^\d+$/.test(a)) ?? 50);
const unreplicatedMs = Number(args.find((a) => a.startsWith('--unreplicated-ms='))?.split('=')[1] ?? 0);
const previousArg = args.find((a) => a.startsWith('--previous='))?.split('=')[1];
const previousRelease = previousArg ? path.resolve(previousArg) : undefined;
const known: string[] = [...ALL_FAULTS, ...CLUSTER_FAULTS, ...SENTINEL_FAULTS, ...SANDBOX_FAULTS, ...UPGRADE_FAULTS];
const faults = args.filter((a): a is Fault => known.includes(a));
if (faults.includes('upgrade') && !previousRelease) throw new Error('the upgrade fault needs --previous=DIR, a built checkout of an earlier release');
const selected = faults.length ? faults : [...ALL_FAULTS, ...CLUSTER_FAULTS, ...SENTINEL_FAULTS, ...SANDBOX_FAULTS, ...(previousRelease ? UPGRADE_FAULTS : [])];

const results = new Map<Fault, TrialResult[]>(selected.map((f) => [f, []]));
// One rig on a single NATS server and Redis, one on a NATS cluster, one on a Redis Sentinel set, each only when one of its faults is selected.
const rigs = [
  [{ ...(previousRelease ? { previousRelease } : {}) }, [...ALL_FAULTS, ...UPGRADE_FAULTS]],
  [{ natsCluster: true }, CLUSTER_FAULTS],
  [{ redisSentinel: true }, SENTINEL_FAULTS],
  [{ sandbox: true }, SANDBOX_FAULTS],
] as const;
for (const [rigOptions, group] of rigs) {
  const mine = selected.filter((f) => group.includes(f));
  if (mine.length === 0) continue;
  const rig = await ChaosRig.start({}, rigOptions);
  try {
    for (let i = 0; i < trials; i++) {
      for (const fault of mine) {
        const r = await rig.trial(fault, fault === 'nats-node' ? { sessions: 10, messagesPerSession: 3, outageMs: 5_000, deadlineMs: 180_000 }
          : fault === 'redis-sentinel' && unreplicatedMs > 0 ? { ...DEFAULT_TRIAL, unreplicatedMs }
          : fault === 'upgrade' ? { ...DEFAULT_TRIAL, sendThroughFault: true } : undefined);
        results.get(fault)!.push(r);
        const bad = faultViolations(fault, r);
        console.log(`trial ${i + 1}/${trials} ${fault.padEnd(12)} accepted ${r.accepted} lost ${r.lost.length} duplicated ${r.duplicatedFinals.length} out of order ${r.orderViolations.length + r.sequenceViolations.length + r.afterFinal.length} stuck ${r.stuck.length} resent ${r.resent} rewinds ${r.rewinds} recover ${(r.recoverMs / 1000).toFixed(1)} s${bad.length ? `  FAIL: ${bad.slice(0, 3).join('; ')}` : ''}`);
        if (bad.length && r.diagnostics) console.log(r.diagnostics.split('\n').map((l) => `    ${l}`).join('\n'));
        if (r.node) console.log(`  ${nodeFaultLine(r)}`);
        if (r.failover) console.log(`  ${failoverLine(r)}`);
      }
    }
  } finally {
    await rig.stop();
  }
}

const sum = (rs: TrialResult[], f: (r: TrialResult) => number) => rs.reduce((n, r) => n + f(r), 0);
const secs = (xs: number[]) => (xs.length ? `${percentile([...xs], 50).toFixed(1)} s / ${Math.max(...xs).toFixed(1)} s` : '-');
console.log('\n| fault | trials | accepted | lost | duplicated finals | sequence / after-final violations | session order violations | stuck leases / slots | resent (identical) | rewinds | recover p50 / max |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const [fault, rs] of results) {
  console.log(`| ${fault} | ${rs.length} | ${sum(rs, (r) => r.accepted)} | ${sum(rs, (r) => r.lost.length)} | ${sum(rs, (r) => r.duplicatedFinals.length)} | ${sum(rs, (r) => r.sequenceViolations.length + r.afterFinal.length)} | ${sum(rs, (r) => r.orderViolations.length)} | ${sum(rs, (r) => r.stuck.length)} | ${sum(rs, (r) => r.resent)} | ${sum(rs, (r) => r.rewinds)} | ${secs(rs.map((r) => r.recoverMs / 1000))} |`);
}
const nodeRuns = results.get('nats-node') ?? [];
if (nodeRuns.length) {
  // The message sent while the node was away, by what was killed: timings are the figures to watch.
  console.log('\n| nats-node trials | count | probe accepted p50 / max | probe answered p50 / max | replicas current after restart p50 / max |');
  console.log('|---|---|---|---|---|');
  const groups: Array<[string, TrialResult[]]> = [
    ['leader', nodeRuns.filter((r) => r.node?.picked === 'leader')],
    ['follower', nodeRuns.filter((r) => r.node?.picked === 'follower')],
    ['wiped', nodeRuns.filter((r) => r.node?.wiped)],
    ['burst', nodeRuns.filter((r) => r.node?.burst)],
  ];
  for (const [name, rs] of groups) {
    const ms = (f: (r: TrialResult) => number | undefined) => rs.map(f).filter((x): x is number => x !== undefined).map((x) => x / 1000);
    console.log(`| ${name} | ${rs.length} | ${secs(ms((r) => r.node?.probeAcceptMs))} | ${secs(ms((r) => r.node?.probeAnswerMs))} | ${secs(ms((r) => r.node?.catchUpMs))} |`);
  }
}
const failovers = (results.get('redis-sentinel') ?? []).map((r) => r.failover).filter((f) => f !== undefined);
if (failovers.length) {
  // From the master's SIGKILL: the Sentinels' promotion, the first callback after it, the message sent meanwhile.
  const ms = (xs: Array<number | undefined>) => secs(xs.filter((x): x is number => x !== undefined).map((x) => x / 1000));
  console.log('\n| redis-sentinel trials | count | promoted p50 / max | first callback p50 / max | probe accepted p50 / max | probe answered p50 / max | in flight at the kill |');
  console.log('|---|---|---|---|---|---|---|');
  console.log(`| all | ${failovers.length} | ${ms(failovers.map((f) => f.failoverMs))} | ${ms(failovers.map((f) => f.resumedMs))} | ${ms(failovers.map((f) => f.probeAcceptMs))} | ${ms(failovers.map((f) => f.probeAnswerMs))} | ${failovers.reduce((n, f) => n + f.inFlight, 0)} |`);
}
const failed = [...results].some(([fault, rs]) => rs.some((r) => faultViolations(fault, r).length > 0));
process.exit(failed ? 1 : 0);
