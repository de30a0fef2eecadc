// npm run bench -- [messages=10000] [concurrency=64] [sequential=500] [--stream-replies=60 --stream-parallel=4
//                   --stream-deltas=200 --stream-rate=50] [--warmup=1000]
//
// The end-to-end benchmark three times (tracing off, sampled at 0.1 with a local OTLP receiver, and at
// 1.0), one after another on a quiet machine, printed as two tables: messages (the model answering at
// once; CPU per message of the four services, of nats-server, redis-server, postgres and the bench
// process with its fakes, and of all of them) and the streaming phase (delta → callback latency,
// callbacks per reply, CPU per streamed reply).
// The --stream-* flags go to every run (see e2e.ts); --stream-replies=0 leaves the second table out.
// Then the shape floor (shape-floor.ts --openai: the four processes and three streams with none of the
// product, the model called through the openai SDK; with --stream and the same --stream-* flags unless
// --stream-replies=0) with the same messages and senders, and the tracing-0.1 run as ratios to it,
// beside the targets. Then the floor again with the product's state round trips as bare calls
// (shape-floor.ts --openai --state, with the same streaming phase: a script before and one after each
// streamed part's callback), the product's essential work and nothing else, and the same run as
// ratios to that. --floor=0 leaves both floors out.
// Then the runner's memory per in-flight run (runner-throughput.ts --inflight, one replica holding
// --runner-inflight=10000 streaming runs against a slow model) as a third table; --runner-inflight=0
// leaves it out.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BESIDE_SERVICES } from './proc-cpu.js';
import type { StreamingResult } from './streaming.js';

const streamFlags = process.argv.slice(2).filter((a) => a.startsWith('--stream-'));
/** The same warm-up for the product and both floors (stats.ts WARMUP_MESSAGES unless given). */
const warmupFlags = process.argv.slice(2).filter((a) => a.startsWith('--warmup='));
const runnerInflight = Number(process.argv.slice(2).find((a) => a.startsWith('--runner-inflight='))?.split('=')[1] ?? 10_000);
const [messages = '10000', concurrency = '64', sequential = '500'] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const withFloor = !process.argv.slice(2).includes('--floor=0');
const e2e = fileURLToPath(new URL('./e2e.js', import.meta.url));
const shapeFloor = fileURLToPath(new URL('./shape-floor.js', import.meta.url));
const runnerBench = fileURLToPath(new URL('./runner-throughput.js', import.meta.url));

/** Runs a benchmark to its end and returns the JSON of its `RESULT` line; exits when there is none. */
function resultOf<T>(script: string, args: string[]): T {
  const run = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (run.status !== 0 || !line) {
    console.error(run.stdout, run.stderr);
    process.exit(1);
  }
  return JSON.parse(line.slice('RESULT '.length)) as T;
}

interface Result {
  tracing: string;
  messages: number;
  failures: number;
  duplicatedFinals: number;
  lost: number;
  natsP50: number;
  p50: number;
  p99: number;
  throughput: number;
  cpuPerMessage: Record<string, number>;
  cpuTotal: number;
  /** CPU ms per message of the backing servers and of the bench process (its load and fakes). */
  cpuBeside: Record<string, number>;
  streaming?: StreamingResult;
}

/**
 * CPU per message of every process the run used. On a machine of a few cores throughput is the cores
 * divided by this, whichever process spends it.
 */
const cpuAll = (r: { cpuTotal: number; cpuBeside: Record<string, number> }) => r.cpuTotal + BESIDE_SERVICES.reduce((sum, name) => sum + (r.cpuBeside[name] ?? 0), 0);

const results: Result[] = [];
for (const tracing of ['off', '0.1', '1.0']) {
  console.error(`bench: e2e with tracing ${tracing} ...`);
  results.push(resultOf<Result>(e2e, [messages, concurrency, sequential, `--tracing=${tracing}`, ...warmupFlags, ...streamFlags]));
}

/** The shape floor's `RESULT` (see shape-floor.ts). */
interface FloorResult {
  variant: string;
  throughput: number;
  p50: number;
  cpuTotal: number;
  cpuBeside: Record<string, number>;
  streaming?: { p50: number; finalP50: number };
}
let floor: FloorResult | undefined;
let stateFloor: FloorResult | undefined;
if (withFloor) {
  console.error('bench: the shape floor (--openai) ...');
  const streams = !streamFlags.includes('--stream-replies=0');
  const floorStreamFlags = streams ? ['--stream', ...streamFlags] : [];
  floor = resultOf<FloorResult>(shapeFloor, [messages, concurrency, '--openai', ...warmupFlags, ...floorStreamFlags]);
  console.error('bench: the shape floor with the state round trips (--openai --state) ...');
  stateFloor = resultOf<FloorResult>(shapeFloor, [messages, concurrency, '--openai', '--state', ...warmupFlags, ...floorStreamFlags]);
}

/** The runner memory benchmark's `RESULT` (see runner-throughput.ts). */
interface RunnerMemory {
  runs: number;
  reached: number;
  cpuPct: number;
  cpuUsPerDelta: number;
  rssPerRunKiB: number;
  heapPerRunKiB: number;
  liveHeapPerRunKiB: number;
}
let memory: RunnerMemory | undefined;
if (runnerInflight > 0) {
  console.error(`bench: one runner holding ${runnerInflight} streaming runs ...`);
  memory = resultOf<RunnerMemory>(runnerBench, [`--inflight=${runnerInflight}`]);
}

const ms = (n: number) => n.toFixed(2);
const cpu = (r: Result, name: string) => ms(r.cpuPerMessage[name] ?? NaN);
console.log(`\n| tracing | messages | failed / lost / duplicated finals | throughput (msg/s, ${concurrency} senders) | p50 one at a time (ms) | p99 (ms) | ratio to NATS req/reply p50 | CPU ms/msg ingress | orchestrator | runner | dispatcher | total | ${BESIDE_SERVICES.join(' | ')} | all processes |`);
console.log(`|---|---|---|---|---|---|---|---|---|---|---|---|${BESIDE_SERVICES.map(() => '---|').join('')}---|`);
for (const r of results) {
  console.log(`| ${r.tracing} | ${r.messages} | ${r.failures} / ${r.lost} / ${r.duplicatedFinals} | ${r.throughput.toFixed(0)} | ${ms(r.p50)} | ${ms(r.p99)} | ${(r.p50 / r.natsP50).toFixed(1)}x | ${cpu(r, 'ingress')} | ${cpu(r, 'orchestrator')} | ${cpu(r, 'runner')} | ${cpu(r, 'dispatcher')} | ${ms(r.cpuTotal)} | ${BESIDE_SERVICES.map((name) => ms(r.cpuBeside[name] ?? NaN)).join(' | ')} | ${ms(cpuAll(r))} |`);
}

const sampled = results.find((r) => r.tracing === '0.1');
if (floor && stateFloor && sampled) {
  console.log(`\nAgainst the shape floor of the same run (${floor.variant}), and the floor with the product's state round trips as bare calls (${stateFloor.variant}); tracing sampled at 0.1.\n`);
  console.log('| | floor | product | ratio | target | floor with state | ratio to it | target |');
  console.log('|---|---|---|---|---|---|---|---|');
  const row = (name: string, f: number, st: number | undefined, p: number, target: string, stateTarget: string, digits: number, fmt: (n: number) => string) =>
    console.log(`| ${name} | ${fmt(f)} | ${fmt(p)} | ${(p / f).toFixed(digits)}x | ${target} | ${st === undefined ? '–' : fmt(st)} | ${st === undefined ? '–' : `${(p / st).toFixed(digits)}x`} | ${stateTarget} |`);
  row(`throughput (msg/s, ${concurrency} senders)`, floor.throughput, stateFloor.throughput, sampled.throughput, '>= 0.3x', '–', 3, (n) => n.toFixed(0));
  row('CPU per message, 4 processes (ms)', floor.cpuTotal, stateFloor.cpuTotal, sampled.cpuTotal, '<= 3x', '<= 2x', 1, ms);
  row(`CPU per message, all processes (ms): ${BESIDE_SERVICES.join(', ')} too`, cpuAll(floor), cpuAll(stateFloor), cpuAll(sampled), '<= 3x', '–', 1, ms);
  row('p50 one at a time (ms)', floor.p50, stateFloor.p50, sampled.p50, '<= 3x', '–', 1, ms);
  if (floor.streaming && sampled.streaming) row('streamed delta → callback p50 (ms)', floor.streaming.p50, stateFloor.streaming?.p50, sampled.streaming.p50, '<= 2x', '–', 1, ms);
}

const streamed = results.filter((r) => r.streaming);
if (streamed.length) {
  const s0 = streamed[0].streaming!;
  console.log(`\nStreaming: ${s0.replies} replies of ${s0.deltas} deltas at ${s0.rate} deltas/s, ${s0.parallel} at a time.\n`);
  console.log('| tracing | replies | failed / lost finals | delta → callback p50 (ms) | p99 (ms) | final part p50 (ms) | callbacks per reply (mean, min–max; emitted) | coalesced snapshots | CPU ms/reply ingress | orchestrator | runner | dispatcher | total | total net of idle |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of streamed) {
    const s = r.streaming!;
    const c = (name: string) => ms(s.cpuPerReply[name] ?? NaN);
    const k = s.callbacksPerReply;
    console.log(`| ${r.tracing} | ${s.replies} | ${s.failures} / ${s.lost} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.finalP50)} | ${k.mean.toFixed(1)}, ${k.min}–${k.max}; ${k.expected} | ${s.coalesced} | ${c('ingress')} | ${c('orchestrator')} | ${c('runner')} | ${c('dispatcher')} | ${ms(s.cpuTotal)} | ${ms(s.cpuTotalNetOfIdle)} |`);
  }
}

if (memory) {
  console.log(`\nOne runner replica, ${memory.runs} streaming runs against a model sending one delta a second.\n`);
  console.log('| runs | reached the model | runner CPU (% of a core) | CPU per delta (µs) | RSS per in-flight run (KiB) | heap used per run (KiB) | live heap per run after a full GC (KiB, target <= 64) |');
  console.log('|---|---|---|---|---|---|---|');
  console.log(`| ${memory.runs} | ${memory.reached} | ${memory.cpuPct.toFixed(0)} | ${memory.cpuUsPerDelta.toFixed(0)} | ${memory.rssPerRunKiB.toFixed(1)} | ${memory.heapPerRunKiB.toFixed(1)} | ${memory.liveHeapPerRunKiB.toFixed(1)} |`);
}
