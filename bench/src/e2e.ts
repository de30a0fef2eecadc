// bench/e2e: messages through the running system (four service processes, real NATS, Redis and
// Postgres) with the fake model answering at once. Two phases in one run:
//   latency    — one message at a time, ingress POST to the final callback (no queueing);
//   throughput — N messages pushed by C concurrent senders (p50/p99 then include queueing).
// The floor, a bare NATS request/reply to another process, is measured in the same run.
//
// Usage: npm run bench:e2e -- [messages=2000] [concurrency=64] [sequential=200]
import { startTestSystem, uniqueName } from '@conveyor/test';
import { natsRequestReplyP50 } from './nats-floor.js';
import { fmtMs, percentile } from './stats.js';

const total = Number(process.argv[2] ?? 2000);
const concurrency = Number(process.argv[3] ?? 64);
const sequential = Number(process.argv[4] ?? 200);
const warmup = Math.min(200, Math.ceil(total / 10));

const sys = await startTestSystem({ serviceEnv: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
try {
  sys.llm.setDefault({ text: 'ok' });
  const sentAt = new Map<string, number>();
  const failures: string[] = [];
  let n = 0;

  async function send(): Promise<string | undefined> {
    const i = n++;
    const t = performance.now();
    const res = await sys.post({ session_id: `bench-${i % 1000}`, message: [{ type: 'Plain', text: `message ${i}` }] });
    const body = (await res.json()) as { data?: { accepted_message_id: string } };
    if (res.status !== 202 || !body.data) {
      failures.push(`${res.status} ${JSON.stringify(body)}`);
      return undefined;
    }
    sentAt.set(body.data.accepted_message_id, t);
    return body.data.accepted_message_id;
  }

  const finals = () => sys.callbacks.received.filter((c) => c.json?.is_final);
  async function pushAll(count: number): Promise<void> {
    let left = count;
    await Promise.all(Array.from({ length: concurrency }, async () => { while (left-- > 0) await send(); }));
  }
  const latencyOf = (cbs: typeof sys.callbacks.received) =>
    cbs.map((c) => c.receivedAt - (sentAt.get(c.json.reply_to) ?? NaN)).filter(Number.isFinite);

  // Warm-up: JIT, connection pools, caches.
  await pushAll(warmup);
  await sys.callbacks.waitFor(() => finals().length >= warmup, 120_000);

  // Latency: one at a time.
  let done = finals().length;
  for (let i = 0; i < sequential; i++) {
    await send();
    done++;
    await sys.callbacks.waitFor(() => finals().length >= done, 30_000);
  }
  const seqLatencies = latencyOf(finals().slice(-sequential));

  // Throughput: C concurrent senders.
  const before = finals().length;
  const started = performance.now();
  await pushAll(total);
  await sys.callbacks.waitFor(() => finals().length >= before + total, 900_000);
  const elapsedS = (performance.now() - started) / 1000;
  const loadLatencies = latencyOf(finals().slice(before));

  const floor = await natsRequestReplyP50(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', `${uniqueName('bench')}.floor`);
  const seqP50 = percentile(seqLatencies, 50);
  console.log(JSON.stringify({ messages: total, concurrency, sequential, failures: failures.length }));
  console.log(`NATS req/reply p50          ${fmtMs(floor)} (other process, 1 KiB)`);
  console.log(`latency p50 (one at a time) ${fmtMs(seqP50)}   p99 ${fmtMs(percentile(seqLatencies, 99))}`);
  console.log(`ratio p50 / NATS p50        ${(seqP50 / floor).toFixed(1)}x`);
  console.log(`throughput                  ${(total / elapsedS).toFixed(0)} messages/s (${concurrency} concurrent senders)`);
  console.log(`under load p50 / p99        ${fmtMs(percentile(loadLatencies, 50))} / ${fmtMs(percentile(loadLatencies, 99))} (includes queueing)`);
  if (failures.length) console.log(`first failure: ${failures[0]}`);
} finally {
  await sys.stop();
}
