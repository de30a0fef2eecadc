// npm run chaos -- [trials per fault=50] [fault ...]
//
// The chaos suite: the whole system with two replicas of every role on a NATS and a Redis of its own,
// a streaming fake model and a callback receiver. Each trial sends messages from several sessions and,
// while the replies stream, SIGKILLs one replica of a role (then restarts it), SIGKILLs the broker and
// restarts it on its store after 3 s, restarts Redis with its data lost, or restarts every replica with
// SIGTERM one after another (a rolling deployment). Prints one row per fault.
import { ALL_FAULTS, ChaosRig, faultViolations, type Fault, type TrialResult } from '@conveyor/test';
import { percentile } from './stats.js';

const args = process.argv.slice(2);
const trials = Number(args.find((a) => /^\d+$/.test(a)) ?? 50);
const faults = args.filter((a): a is Fault => (ALL_FAULTS as string[]).includes(a));
const selected = faults.length ? faults : ALL_FAULTS;

const results = new Map<Fault, TrialResult[]>(selected.map((f) => [f, []]));
const rig = await ChaosRig.start();
try {
  for (let i = 0; i < trials; i++) {
    for (const fault of selected) {
      const r = await rig.trial(fault);
      results.get(fault)!.push(r);
      const bad = faultViolations(fault, r);
      console.log(`trial ${i + 1}/${trials} ${fault.padEnd(12)} accepted ${r.accepted} lost ${r.lost.length} duplicated ${r.duplicatedFinals.length} out of order ${r.orderViolations.length + r.sequenceViolations.length + r.afterFinal.length} stuck ${r.stuck.length} resent ${r.resent} rewinds ${r.rewinds} recover ${(r.recoverMs / 1000).toFixed(1)} s${bad.length ? `  FAIL: ${bad.slice(0, 3).join('; ')}` : ''}`);
    }
  }
} finally {
  await rig.stop();
}

const sum = (rs: TrialResult[], f: (r: TrialResult) => number) => rs.reduce((n, r) => n + f(r), 0);
console.log('\n| fault | trials | accepted | lost | duplicated finals | sequence / after-final violations | session order violations | stuck leases / slots | resent (identical) | rewinds | recover p50 / max |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const [fault, rs] of results) {
  const recover = rs.map((r) => r.recoverMs / 1000);
  console.log(`| ${fault} | ${rs.length} | ${sum(rs, (r) => r.accepted)} | ${sum(rs, (r) => r.lost.length)} | ${sum(rs, (r) => r.duplicatedFinals.length)} | ${sum(rs, (r) => r.sequenceViolations.length + r.afterFinal.length)} | ${sum(rs, (r) => r.orderViolations.length)} | ${sum(rs, (r) => r.stuck.length)} | ${sum(rs, (r) => r.resent)} | ${sum(rs, (r) => r.rewinds)} | ${percentile([...recover], 50).toFixed(1)} s / ${Math.max(...recover).toFixed(1)} s |`);
}
const failed = [...results].some(([fault, rs]) => rs.some((r) => faultViolations(fault, r).length > 0));
process.exit(failed ? 1 : 0);
