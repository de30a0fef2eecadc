// bench/e2e: N messages through the running system (four service processes, real NATS, Redis and
// Postgres) with the fake model answering at once. Prints throughput, ingress-to-callback latency
// and its ratio to a bare NATS request/reply measured in the same run.
//
// Usage: npm run bench:e2e -- [messages=2000] [concurrency=64]
import { startTestSystem, uniqueName } from '@conveyor/test';
import { natsRequestReplyP50 } from './nats-floor.js';
import { fmtMs, percentile } from './stats.js';

const total = Number(process.argv[2] ?? 2000);
const concurrency = Number(process.argv[3] ?? 64);
const warmup = Math.min(200, Math.ceil(total / 10));

const sys = await startTestSystem({ serviceEnv: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
try {
  sys.llm.setDefault({ text: 'ok' });
  const sentAt = new Map<string, number>();
  const failures: string[] = [];

  async function send(i: number): Promise<void> {
    const t = performance.now();
    const res = await sys.post({ session_id: `bench-${i % 1000}`, message: [{ type: 'Plain', text: `message ${i}` }] });
    const body = (await res.json()) as { data?: { accepted_message_id: string } };
    if (res.status !== 202 || !body.data) failures.push(`${res.status} ${JSON.stringify(body)}`);
    else sentAt.set(body.data.accepted_message_id, t);
  }

  async function pushAll(from: number, to: number): Promise<void> {
    let next = from;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < to) await send(next++);
      }),
    );
  }

  // Warm-up: JIT, connection pools, caches.
  await pushAll(0, warmup);
  await sys.callbacks.waitFor((r) => r.length >= warmup, 120_000);
  const before = sys.callbacks.received.length;

  const started = performance.now();
  await pushAll(warmup, warmup + total);
  const all = await sys.callbacks.waitFor((r) => r.length >= before + total, 600_000);
  const elapsedS = (performance.now() - started) / 1000;

  const latencies = all.slice(before).map((c) => c.receivedAt - (sentAt.get(c.json.reply_to) ?? NaN)).filter(Number.isFinite);
  const floor = await natsRequestReplyP50(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', `${uniqueName('bench')}.floor`);
  const p50 = percentile(latencies, 50);
  console.log(JSON.stringify({ messages: total, concurrency, failures: failures.length }));
  console.log(`throughput            ${(total / elapsedS).toFixed(0)} messages/s`);
  console.log(`ingress→callback p50  ${fmtMs(p50)}`);
  console.log(`ingress→callback p99  ${fmtMs(percentile(latencies, 99))}`);
  console.log(`NATS req/reply p50    ${fmtMs(floor)} (other process, 1 KiB)`);
  console.log(`ratio p50 / NATS p50  ${(p50 / floor).toFixed(1)}x`);
  if (failures.length) console.log(`first failure: ${failures[0]}`);
} finally {
  await sys.stop();
}
