// bench/runner: the runner service alone (real NATS, Redis, Postgres; the fake model in this
// process). Run requests are published straight onto the runs stream and a run counts when its
// `done` event is seen. Prints runs/s with the model answering at once and with 200 ms to first
// token + 50 tokens/s, the throughput ratio of 1, 2 and 4 runner processes (model-bound), and the
// resident memory each in-flight run costs.
//
// Usage: npm run bench:runner -- [fastRuns=600] [slowRunsPerSlot=3]
//        npm run bench:runner -- --inflight=10000 [--tick-ms=1000]
//
// --inflight=N measures only the memory of N concurrent streaming runs in ONE runner replica
// (RUNNER_CONCURRENCY=N): the fake model streams one delta every tick-ms to every run from one shared
// timer and keeps the streams open, the fake counts the model requests in flight, and once all N are
// streaming the runner's RSS (/proc/<pid>/status) and V8 heap (a SIGUSR2 probe preloaded into it, before
// and after a full GC) are compared with the idle runner: KiB per run = (rss_at - rss_before) / N. Then
// the streams are released and the runs drain. The runner consumer's max_ack_pending (topology: 10,000)
// bounds the runs one consumer can hold, so N above it cannot all be in flight.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { RunRequest } from '@conveyor/contracts';
import { BusPublisher } from '@conveyor/bus';
import { startTestSystem, NATS_URL } from '@conveyor/test';
import { processCpuMs } from './proc-cpu.js';
import { commandLine } from './command-line.js';

const { flags, positional } = commandLine();
const fastRuns = Number(positional[0] ?? 600);
const slowRunsPerSlot = Number(positional[1] ?? 3);
const heldRuns = flags.has('inflight') ? Number(flags.get('inflight') || 10_000) : 0;
const tickMs = Number(flags.get('tick-ms') ?? 1_000);
const probe = new URL('./memory-probe.js', import.meta.url).href;
const SLOTS = 8; // RUNNER_CONCURRENCY in the scaling runs: the per-replica bound the scaling shows
const words = (n: number) => Array.from({ length: n }, (_, i) => `tok${i}`).join(' ');

const sys = await startTestSystem({
  startServices: false,
  serviceEnv: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: '' },
  // The memory probe (bench/src/memory-probe.ts) and a gc() it may call; nothing else changes.
  serviceNodeArgs: heldRuns ? ['--expose-gc', '--import', probe] : [],
});
const nc = await connect({ servers: NATS_URL });
const publisher = new BusPublisher(jetstream(nc));
const done = new Set<string>();
let onDone: (queryId: string) => void = () => {};
const sub = nc.subscribe(`${sys.prefix}.v1.event.>`, {
  callback: (_err, msg) => {
    const e = msg.json<{ kind: string; queryId: string; last?: boolean }>();
    // A run ends with `done`, or with its answer marked `last`.
    if (e.kind === 'done' || e.last === true) {
      done.add(e.queryId);
      onDone(e.queryId);
    }
  },
});
let instance = 0;

function request(): RunRequest {
  const queryId = randomUUID();
  return {
    v: 1, queryId, pipelineId: 'default', conversationId: randomUUID(), model: { primary: 'fake', fallbacks: [] }, stream: true,
    route: { botId: sys.botId, adapter: 'http-bot', sessionId: queryId, launcherType: 'person', launcherId: 'b', senderId: 'b', replyTo: 'r' },
    messages: [{ role: 'user', content: 'benchmark' }], exceptionHandling: 'show-hint', failureHint: 'failed',
  };
}

const db = new pg.Pool({ connectionString: sys.db.url, max: 2 });

/**
 * `n` run requests, each with its conversation in the database as the orchestrator would have made it
 * (the run's history write appends to it; without the row that write fails on the foreign key).
 */
async function requests(n: number): Promise<RunRequest[]> {
  const runs = Array.from({ length: n }, () => request());
  await db.query(
    `INSERT INTO "Conversation" ("id", "botId", "launcherType", "launcherId", "pipelineId", "createdAt", "updatedAt")
     SELECT id, $2, 'person', id, 'default', now(), now() FROM unnest($1::text[]) AS id`,
    [runs.map((r) => r.conversationId), sys.botId],
  );
  return runs;
}

/** Publishes `n` runs at once; resolves with runs/s from first publish to last `done`. */
async function measure(n: number): Promise<number> {
  const ids = new Set<string>();
  const all = await requests(n);
  const started = performance.now();
  for (const r of all) ids.add(r.queryId);
  const finished = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${[...ids].filter((id) => done.has(id)).length}/${n} done`)), 300_000);
    onDone = () => {
      if ([...ids].every((id) => done.has(id))) {
        clearTimeout(timer);
        resolve();
      }
    };
  });
  await Promise.all(all.map((r) => publisher.publish(sys.topology.subjects.run(sys.botId), RunRequest, r, { msgId: `run:${r.queryId}`, queryId: r.queryId })));
  await finished;
  return n / ((performance.now() - started) / 1000);
}

async function withRunners<T>(count: number, env: NodeJS.ProcessEnv, fn: (pids: number[]) => Promise<T>): Promise<T> {
  const started = await Promise.all(Array.from({ length: count }, () => sys.services.start('runner', env, `runner-${++instance}` as never)));
  try {
    return await fn(started.map((s) => s.child.pid!));
  } finally {
    await Promise.all(started.map((s) => sys.services.kill(s.instance, 'SIGTERM')));
  }
}

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
const fmt = (x: number) => x.toFixed(1);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface MemoryLine {
  phase: string; rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number;
  /** Event-loop delay since the previous probe. */
  loop: { p50Ms: number; p99Ms: number; maxMs: number };
}

/** Signals the preloaded probe and reads its lines from the service's collected stdout. */
async function probeMemory(instance: string): Promise<{ now: MemoryLine; afterGc?: MemoryLine }> {
  const svc = sys.services.get(instance);
  const read = () => svc.logs.filter((l) => l.startsWith('BENCH_MEMORY ')).map((l) => JSON.parse(l.slice('BENCH_MEMORY '.length)) as MemoryLine);
  const gcLines = () => read().filter((l) => l.phase === 'after-gc').length;
  const earlier = gcLines();
  svc.child.kill('SIGUSR2');
  for (let i = 0; i < 300 && gcLines() <= earlier; i++) await sleep(100);
  const lines = read();
  return { now: lines.findLast((l) => l.phase === 'now')!, afterGc: lines.findLast((l) => l.phase === 'after-gc') };
}

/** The runner's log lines (LOG_LEVEL=warn: warnings and errors) counted by message, with the last of each. */
function logSummary(instance: string): string {
  const byMsg = new Map<string, { n: number; last: string }>();
  for (const l of sys.services.get(instance).logs) {
    if (l.startsWith('BENCH_MEMORY ')) continue;
    let key = l.slice(0, 120);
    try {
      const j = JSON.parse(l) as { level?: number; msg?: string };
      key = `${j.level ?? '?'} ${j.msg ?? ''}`;
    } catch {
      // not a pino line (a Node warning, a stack trace line)
    }
    const e = byMsg.get(key) ?? { n: 0, last: '' };
    e.n++;
    e.last = l.slice(0, 400);
    byMsg.set(key, e);
  }
  if (byMsg.size === 0) return '  (none)';
  return [...byMsg.values()].sort((a, b) => b.n - a.n).slice(0, 15).map((e) => `  ${e.n} x ${e.last}`).join('\n');
}

/** Publishes runs in batches (10,000 publishes at once would only queue in the client). */
async function publishRuns(runs: RunRequest[]): Promise<void> {
  for (let i = 0; i < runs.length; i += 500) {
    await Promise.all(runs.slice(i, i + 500).map((r) => publisher.publish(sys.topology.subjects.run(sys.botId), RunRequest, r, { msgId: `run:${r.queryId}`, queryId: r.queryId })));
  }
}

/** N streaming runs held open in one runner: resident memory and heap per in-flight run. */
async function heldRunsMemory(n: number): Promise<void> {
  const name = `runner-${instance + 1}`;
  await withRunners(1, { RUNNER_CONCURRENCY: String(n) }, async ([pid]) => {
    // Warm-up through the same path (ticked streams), then let the runner settle.
    sys.llm.setDefault({ text: words(3), tickMs: 100 });
    await measure(200);
    await sleep(2_000);
    const rssBefore = rssKb(pid);
    const heapBefore = await probeMemory(name);
    console.log(`before: RSS ${fmt(rssBefore / 1024)} MiB, heap used ${fmt(heapBefore.now.heapUsed / 2 ** 20)} MiB (${fmt((heapBefore.afterGc?.heapUsed ?? NaN) / 2 ** 20)} MiB after a full GC)`);

    let deltas = 0;
    // One spec object for every run: the fake keeps one copy of its deltas; one delta per tick, held open.
    sys.llm.setDefault({ text: words(3_600), tickMs, holdOpen: true, onDelta: () => void deltas++ });
    const runs = await requests(n);
    const ids = new Set(runs.map((r) => r.queryId));
    let finished = 0;
    onDone = (id) => void (ids.has(id) && finished++);
    const started = performance.now();
    await publishRuns(runs);
    console.error(`bench: ${n} runs published in ${fmt((performance.now() - started) / 1000)} s; waiting until all stream`);

    // Until every run has its model request open at the fake, or the count stops growing (less than
    // 0.5 % of N in 30 s). The progress line says where the runs are: still in the stream (pending),
    // delivered to the runner and not acked (ack pending), or at the model; and the runner's CPU.
    const jsm = await jetstreamManager(nc);
    const spec = sys.topology.consumers.runner;
    const consumerState = async () => {
      const ci = await jsm.consumers.info(spec.stream, spec.durable).catch(() => undefined);
      return ci ? `stream pending ${ci.num_pending}, ack pending ${ci.num_ack_pending} (max_ack_pending ${ci.config.max_ack_pending})` : 'consumer info unavailable';
    };
    const history: { at: number; inFlight: number }[] = [];
    let lastReport = { at: performance.now(), cpu: processCpuMs(pid), self: processCpuMs(process.pid) };
    while (sys.llm.inFlight < n) {
      await sleep(500);
      const now = performance.now();
      history.push({ at: now, inFlight: sys.llm.inFlight });
      if (now - lastReport.at > 10_000) {
        const [cpuNow, selfNow] = [processCpuMs(pid), processCpuMs(process.pid)];
        const pct = (ms: number) => `${((ms / (now - lastReport.at)) * 100).toFixed(0)} %`;
        console.error(`bench: ${sys.llm.inFlight} model requests in flight after ${fmt((now - started) / 1000)} s; ${await consumerState()}; runner RSS ${fmt(rssKb(pid) / 1024)} MiB, CPU ${pct(cpuNow - lastReport.cpu)} of a core; this process (fake model) ${pct(selfNow - lastReport.self)}`);
        lastReport = { at: now, cpu: cpuNow, self: selfNow };
      }
      const ago = history.find((h) => h.at >= now - 30_000)!;
      if ((now - started > 30_000 && sys.llm.inFlight - ago.inFlight < n / 200) || now - started > 900_000) break;
    }
    const rampS = (performance.now() - started) / 1000;
    const reached = sys.llm.inFlight;
    if (reached < n) {
      const cpu0 = processCpuMs(pid);
      await sleep(5_000);
      const cpuPct = (processCpuMs(pid) - cpu0) / 50;
      const loop = (await probeMemory(name)).now.loop;
      console.log(`runner log lines so far:\n${logSummary(name)}`);
      console.log(`only ${reached} of ${n} runs reached the model after ${fmt(rampS)} s (stalled; ${finished} finished); ${await consumerState()}; runner CPU ${cpuPct.toFixed(0)} % of a core, event-loop delay p50 ${fmt(loop.p50Ms)} ms, p99 ${fmt(loop.p99Ms)} ms, max ${fmt(loop.maxMs)} ms; the measurement below is at ${reached}`);
    } else {
      console.log(`all ${n} runs streaming ${fmt(rampS)} s after the first publish`);
    }
    // Every stream, the last one included, gets a few deltas; then sample.
    await sleep(3 * tickMs);
    const deltasBefore = deltas;
    const cpuBefore = processCpuMs(pid);
    const sampleStarted = performance.now();
    let rssAt = 0;
    for (let i = 0; i < 5; i++) {
      rssAt = Math.max(rssAt, rssKb(pid));
      await sleep(1_000);
    }
    const sampleMs = performance.now() - sampleStarted;
    const deltaRate = (deltas - deltasBefore) / (sampleMs / 1000);
    // What holding them costs: the runner's CPU per streamed delta (an event every 8th), and so the
    // deltas per second one runner's main thread could take at most.
    const cpuPct = ((processCpuMs(pid) - cpuBefore) / sampleMs) * 100;
    const cpuUsPerDelta = ((processCpuMs(pid) - cpuBefore) * 1000) / Math.max(1, deltas - deltasBefore);
    const heapAt = await probeMemory(name);
    console.log(`runner CPU while holding them: ${cpuPct.toFixed(0)} % of a core, ${fmt(cpuUsPerDelta)} µs per streamed delta (=> at most ~${fmt(1e6 / cpuUsPerDelta)} deltas/s per runner on one core)`);
    console.log(`runner event-loop delay since the previous probe (ramp and hold): p50 ${fmt(heapAt.now.loop.p50Ms)} ms, p99 ${fmt(heapAt.now.loop.p99Ms)} ms, max ${fmt(heapAt.now.loop.maxMs)} ms`);
    const held = Math.min(sys.llm.inFlight, reached);
    console.log(`at ${held} in flight (fake model: ${sys.llm.inFlight} requests open, ${fmt(deltaRate)} deltas/s): RSS ${fmt(rssAt / 1024)} MiB, heap used ${fmt(heapAt.now.heapUsed / 2 ** 20)} MiB (${fmt((heapAt.afterGc?.heapUsed ?? NaN) / 2 ** 20)} MiB after a full GC)`);
    const kib = (a: number, b: number) => fmt((a - b) / held);
    console.log(`per in-flight run: RSS ${kib(rssAt, rssBefore)} KiB, heap used ${kib(heapAt.now.heapUsed / 1024, heapBefore.now.heapUsed / 1024)} KiB, live heap after GC ${kib((heapAt.afterGc?.heapUsed ?? NaN) / 1024, (heapBefore.afterGc?.heapUsed ?? NaN) / 1024)} KiB (target <= 64 KiB)`);
    console.log(`RESULT ${JSON.stringify({
      runs: n, reached: held, tickMs, rampS, deltaRate, cpuPct, cpuUsPerDelta,
      rssBeforeKiB: rssBefore, rssAtKiB: rssAt, rssPerRunKiB: (rssAt - rssBefore) / held,
      heapUsedBefore: heapBefore.now.heapUsed, heapUsedAt: heapAt.now.heapUsed, liveHeapBefore: heapBefore.afterGc?.heapUsed, liveHeapAt: heapAt.afterGc?.heapUsed,
      heapPerRunKiB: (heapAt.now.heapUsed - heapBefore.now.heapUsed) / 1024 / held,
      liveHeapPerRunKiB: ((heapAt.afterGc?.heapUsed ?? NaN) - (heapBefore.afterGc?.heapUsed ?? NaN)) / 1024 / held,
    })}`);

    // Release the streams: every run finishes (final snapshot, history write, done).
    const releasedAt = performance.now();
    sys.llm.setDefault({ text: words(3) });
    sys.llm.release();
    const target = reached;
    while (finished < target && performance.now() - releasedAt < 300_000) await sleep(500);
    console.log(`released: ${finished} of ${n} runs finished ${fmt((performance.now() - releasedAt) / 1000)} s later`);
    console.log(`runner log lines (warnings and errors):\n${logSummary(name)}`);
  });
}

try {
  if (heldRuns) {
    await heldRunsMemory(heldRuns);
  } else {
    // 1. The model answers at once (20 tokens): the runner's own cost per run.
    sys.llm.setDefault({ text: words(20) });
    const fast = await withRunners(1, { RUNNER_CONCURRENCY: '32' }, async () => {
      await measure(50); // warm-up: connections, JIT, caches
      return measure(fastRuns);
    });
    console.log(`instant model, 1 runner (concurrency 32): ${fmt(fast)} runs/s over ${fastRuns} runs`);

    // 2. A realistic model: 200 ms to first token, 50 tokens/s, 50 tokens (about 1.2 s per run).
    sys.llm.setDefault({ text: words(50), delayFirstTokenMs: 200, tokensPerSecond: 50 });
    const scaling: Record<number, number> = {};
    for (const replicas of [1, 2, 4]) {
      scaling[replicas] = await withRunners(replicas, { RUNNER_CONCURRENCY: String(SLOTS) }, () => measure(replicas * SLOTS * slowRunsPerSlot));
      console.log(`200 ms TTFT + 50 tok/s, ${replicas} runner(s) x ${SLOTS} slots: ${fmt(scaling[replicas])} runs/s`);
    }
    console.log(`throughput ratio 1:2:4 runners = 1 : ${(scaling[2] / scaling[1]).toFixed(2)} : ${(scaling[4] / scaling[1]).toFixed(2)} (ideal 1 : 2 : 4)`);

    // 3. Resident memory per in-flight run: one runner holding many slow runs at once.
    const inflight = 200;
    sys.llm.setDefault({ text: words(300), delayFirstTokenMs: 200, tokensPerSecond: 50 });
    await withRunners(1, { RUNNER_CONCURRENCY: String(inflight) }, async ([pid]) => {
      sys.llm.setDefault({ text: words(5) });
      await measure(50);
      await new Promise((r) => setTimeout(r, 1_000));
      const idle = rssKb(pid);
      sys.llm.setDefault({ text: words(300), delayFirstTokenMs: 200, tokensPerSecond: 50 });
      const run = measure(inflight);
      await new Promise((r) => setTimeout(r, 3_000)); // all runs streaming by now (each lasts about 6 s)
      let peak = 0;
      for (let i = 0; i < 5; i++) {
        peak = Math.max(peak, rssKb(pid));
        await new Promise((r) => setTimeout(r, 300));
      }
      await run;
      console.log(`resident memory: idle ${fmt(idle / 1024)} MiB, with ${inflight} runs in flight ${fmt(peak / 1024)} MiB => ${fmt((peak - idle) / inflight)} KiB per in-flight run`);
    });
  }
} finally {
  sub.unsubscribe();
  await nc.close();
  await db.end();
  await sys.stop();
}
