// bench/runner: the runner service alone (real NATS, Redis, Postgres; the fake model in this
// process). Run requests are published straight onto the runs stream and a run counts when its
// `done` event is seen. Prints runs/s with the model answering at once and with 200 ms to first
// token + 50 tokens/s, the throughput ratio of 1, 2 and 4 runner processes (model-bound), and the
// resident memory each in-flight run costs.
//
// Usage: npm run bench:runner -- [fastRuns=600] [slowRunsPerSlot=3]
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { RunRequest } from '@conveyor/contracts';
import { BusPublisher } from '@conveyor/bus';
import { startTestSystem, NATS_URL } from '@conveyor/test';

const fastRuns = Number(process.argv[2] ?? 600);
const slowRunsPerSlot = Number(process.argv[3] ?? 3);
const SLOTS = 8; // RUNNER_CONCURRENCY in the scaling runs: the per-replica bound the scaling shows
const words = (n: number) => Array.from({ length: n }, (_, i) => `tok${i}`).join(' ');

const sys = await startTestSystem({ startServices: false, serviceEnv: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
const nc = await connect({ servers: NATS_URL });
const publisher = new BusPublisher(jetstream(nc));
const done = new Set<string>();
let onDone: () => void = () => {};
const sub = nc.subscribe(`${sys.prefix}.v1.event.>`, {
  callback: (_err, msg) => {
    const e = msg.json<{ kind: string; queryId: string }>();
    if (e.kind === 'done') {
      done.add(e.queryId);
      onDone();
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

/** Publishes `n` runs at once; resolves with runs/s from first publish to last `done`. */
async function measure(n: number): Promise<number> {
  const ids = new Set<string>();
  const started = performance.now();
  const all = Array.from({ length: n }, () => request());
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

try {
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
} finally {
  sub.unsubscribe();
  await nc.close();
  await sys.stop();
}
