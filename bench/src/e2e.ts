// bench/e2e: messages through the running system (four service processes, real NATS, Redis and
// Postgres) with the fake model answering at once. Two phases in one run:
//   latency    — one message at a time, ingress POST to the final callback (no queueing);
//   throughput — N messages pushed by C concurrent senders (p50/p99 then include queueing).
//   streaming  — replies of 200 streamed deltas, a few at a time: fake model's delta → HTTP-bot callback
//                latency, callbacks per reply and whether the dispatcher coalesced snapshots
//                (bench/src/streaming.ts).
// The floor, a bare NATS request/reply to another process, is measured in the same run.
//
// Usage: npm run bench:e2e -- [messages=2000] [concurrency=64] [sequential=200] [--tracing=off|0.1|1]
//        [--stream-replies=60] [--stream-parallel=4] [--stream-deltas=200] [--stream-rate=50 deltas/s]
//        (--stream-replies=0 skips the streaming phase; so does --profile unless --stream-replies is given)
//        [--profile=DIR]   (a V8 CPU profile of each service written to DIR, summarised at the end)
//        [--callback-delay-ms=N] (the fake integrator answers each callback after N ms)
//        [--warmup=N]      (messages sent before any phase is measured; default 1000, as the floor's)
//        [--back-to-back=N] (after the one-at-a-time phase, N sessions one after another each get two
//                           messages at once: the second's POST → final callback latency, p50)
//        [--round-trips]   (the Redis round trips and commands, NATS messages and Postgres
//                           transactions per message, one at a time and in the throughput phase,
//                           against a Redis and a NATS of the run's own)
// CPU per message is read from /proc/<pid>/stat of each service before and after the throughput phase,
// CPU per streamed reply the same way around the streaming phase.
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startOwnedNats, startOwnedRedis, startTestSystem, uniqueName, type OwnedDependency } from '@conveyor/test';
import { natsRequestReplyP50 } from './nats-floor.js';
import { CpuMeter, perMessage, SideMeter } from './proc-cpu.js';
import { summariseFolder } from './profile-summary.js';
import { EVENT_DELIVERY, formatRoundTrips, LATENCY_PATH, RoundTripMeter, type RoundTripCounts } from './round-trips.js';
import { fmtMs, percentile, WARMUP_MESSAGES } from './stats.js';
import { SignedSender } from './signed-sender.js';
import { measureStreaming, type StreamingResult } from './streaming.js';
import { commandLine } from './command-line.js';

const { flags, positional } = commandLine();
const total = Number(positional[0] ?? 2000);
const concurrency = Number(positional[1] ?? 64);
const sequential = Number(positional[2] ?? 200);
const warmup = Math.min(Number(flags.get('warmup') ?? WARMUP_MESSAGES), total);
const tracing = flags.get('tracing') ?? 'off';
const streamOpts = {
  // A profile run keeps to the phases earlier profiles covered unless asked.
  replies: Number(flags.get('stream-replies') ?? (flags.has('profile') ? 0 : 60)),
  parallel: Number(flags.get('stream-parallel') ?? 4),
  deltas: Number(flags.get('stream-deltas') ?? 200),
  rate: Number(flags.get('stream-rate') ?? 50),
};
const profileDir = flags.has('profile') ? path.resolve(flags.get('profile') || `bench-profiles/${new Date().toISOString().replace(/[:.]/g, '-')}`) : undefined;

const tracingEnv: NodeJS.ProcessEnv = tracing === 'off'
  ? { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: 'none', OTEL_TRACES_SAMPLER: 'always_off' }
  : { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: tracing, OTEL_BSP_SCHEDULE_DELAY: '1000' };
if (profileDir) mkdirSync(profileDir, { recursive: true });
/** The monotonic clock V8 stamps profile samples with, in microseconds. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const profileArgs = profileDir ? ['--cpu-prof', '--cpu-prof-interval=500', `--cpu-prof-dir=${profileDir}`] : [];

const countRoundTrips = flags.has('round-trips');
/** How long the fake integrator takes to answer each callback (a platform's API is rarely as fast as a local one). */
const callbackDelayMs = Number(flags.get('callback-delay-ms') ?? 0);
/** Sessions that each get two messages back to back (the second sent once the first was accepted). */
const backToBack = Number(flags.get('back-to-back') ?? 0);
const ownNats = countRoundTrips ? await startOwnedNats({ monitor: true }) : undefined;
const ownRedis: OwnedDependency | undefined = countRoundTrips ? await startOwnedRedis() : undefined;
const natsUrl = ownNats?.url ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const sys = await startTestSystem({
  serviceEnv: { LOG_LEVEL: 'warn', ...tracingEnv },
  serviceNodeArgs: profileArgs,
  ...(ownNats ? { natsUrl: ownNats.url } : {}),
  ...(ownRedis ? { redisUrl: ownRedis.url } : {}),
  ...(callbackDelayMs > 0 ? { callbackRespond: () => new Promise<number>((resolve) => setTimeout(() => resolve(200), callbackDelayMs)) } : {}),
});
let stopped = false;
const sender = new SignedSender(sys, concurrency);
try {
  const cpu = new CpuMeter(new Map(sys.services.services.map((s) => [s.instance, s.child.pid!])));
  sys.llm.setDefault({ text: 'ok' });
  const sentAt = new Map<string, number>();
  const failures: string[] = [];
  let n = 0;

  async function send(): Promise<string | undefined> {
    const i = n++;
    const t = performance.now();
    const res = await sender.send({ session_id: `bench-${i % 1000}`, message: [{ type: 'Plain', text: `message ${i}` }] });
    if (res.acceptedId === undefined) {
      failures.push(`${res.status} ${JSON.stringify(res.body)}`);
      return undefined;
    }
    sentAt.set(res.acceptedId, t);
    return res.acceptedId;
  }

  // Kept up to date as callbacks arrive: filtering every callback received on each arrival made the
  // bench's own CPU grow with the square of the run's length.
  const finalCallbacks: typeof sys.callbacks.received = [];
  let scanned = 0;
  const finals = () => {
    for (; scanned < sys.callbacks.received.length; scanned++) {
      const c = sys.callbacks.received[scanned];
      if (c.json?.is_final) finalCallbacks.push(c);
    }
    return finalCallbacks;
  };
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
  const meter = () => (ownNats?.monitorUrl && ownRedis ? new RoundTripMeter({ redisUrl: ownRedis.url, natsMonitorUrl: ownNats.monitorUrl, databaseUrl: sys.db.url }) : undefined);
  const seqRoundTrips = meter();
  await seqRoundTrips?.start();
  let done = finals().length;
  for (let i = 0; i < sequential; i++) {
    await send();
    done++;
    await sys.callbacks.waitFor(() => finals().length >= done, 30_000);
  }
  const seqLatencies = latencyOf(finals().slice(-sequential));
  const seqTrips: RoundTripCounts | undefined = await seqRoundTrips?.stop();

  // Back to back: the second message of a session waits for the first's turn to end.
  const pairLatencies: number[] = [];
  for (let k = 0; k < backToBack; k++) {
    const session = `b2b-${k}-${n}`;
    const post = async (text: string) => {
      const t = performance.now();
      const res = await sender.send({ session_id: session, message: [{ type: 'Plain', text }] });
      if (res.acceptedId === undefined) throw new Error(`back-to-back message refused: ${res.status} ${JSON.stringify(res.body)}`);
      sentAt.set(res.acceptedId, t);
      return res.acceptedId;
    };
    await post('first of two');
    const second = await post('second of two');
    const [cb] = (await sys.callbacks.waitFor((all) => all.some((c) => c.json?.reply_to === second && c.json.is_final), 60_000)).filter((c) => c.json?.reply_to === second && c.json.is_final);
    pairLatencies.push(cb!.receivedAt - sentAt.get(second)!);
  }

  // Throughput: C concurrent senders.
  const before = finals().length;
  const roundTrips = meter();
  await roundTrips?.start();
  const side = new SideMeter(new Map(sys.services.services.map((s) => [s.instance, s.child.pid!])));
  side.start();
  cpu.start();
  const phaseStartUs = monotonicUs();
  const started = performance.now();
  await pushAll(total);
  await sys.callbacks.waitFor(() => finals().length >= before + total, 900_000);
  const elapsedS = (performance.now() - started) / 1000;
  const cpuMs = cpu.stop();
  const sideUse = side.stop();
  const trips: RoundTripCounts | undefined = await roundTrips?.stop();
  // The profiles' summary keeps to this phase (see profile-summary.ts).
  if (profileDir) writeFileSync(path.join(profileDir, 'window.json'), JSON.stringify({ startUs: phaseStartUs, endUs: monotonicUs(), cpuMs: Object.fromEntries(cpuMs) }));
  const finalsPerReply = new Map<string, number>();
  for (const c of finals()) finalsPerReply.set(c.json.reply_to, (finalsPerReply.get(c.json.reply_to) ?? 0) + 1);
  const duplicated = [...finalsPerReply.values()].filter((n) => n > 1).length;
  const loadLatencies = latencyOf(finals().slice(before));

  // Streaming: replies of many deltas, the model paced.
  let streaming: StreamingResult | undefined;
  let streamTrips: RoundTripCounts | undefined;
  if (streamOpts.replies > 0) {
    console.error(`bench: streaming phase, ${streamOpts.replies} replies of ${streamOpts.deltas} deltas at ${streamOpts.rate}/s, ${streamOpts.parallel} at a time ...`);
    const streamRoundTrips = meter();
    await streamRoundTrips?.start();
    streaming = await measureStreaming(sys, cpu, streamOpts);
    streamTrips = await streamRoundTrips?.stop();
  }

  const floor = await natsRequestReplyP50(natsUrl, `${uniqueName('bench')}.floor`);
  const seqP50 = percentile(seqLatencies, 50);
  console.log(JSON.stringify({ messages: total, concurrency, sequential, tracing, failures: failures.length, duplicatedFinals: duplicated, lost: sentAt.size - finalsPerReply.size }));
  console.log(`NATS req/reply p50          ${fmtMs(floor)} (other process, 1 KiB)`);
  console.log(`latency p50 (one at a time) ${fmtMs(seqP50)}   p99 ${fmtMs(percentile(seqLatencies, 99))}`);
  console.log(`ratio p50 / NATS p50        ${(seqP50 / floor).toFixed(1)}x`);
  if (pairLatencies.length) console.log(`back to back, second's p50 ${fmtMs(percentile(pairLatencies, 50))}   p99 ${fmtMs(percentile(pairLatencies, 99))} (${pairLatencies.length} sessions${callbackDelayMs ? `, callbacks answered after ${callbackDelayMs} ms` : ''})`);
  console.log(`throughput                  ${(total / elapsedS).toFixed(0)} messages/s (${concurrency} concurrent senders)`);
  console.log(`under load p50 / p99        ${fmtMs(percentile(loadLatencies, 50))} / ${fmtMs(percentile(loadLatencies, 99))} (includes queueing)`);
  let cpuTotal = 0;
  for (const [name, ms] of cpuMs) {
    cpuTotal += ms;
    console.log(`CPU per message ${name.padEnd(12)} ${fmtMs(ms / total)}`);
  }
  console.log(`CPU per message, 4 services ${fmtMs(cpuTotal / total)}`);
  console.log(`CPU per message beside them ${[...sideUse.cpuMs].map(([name, ms]) => `${name} ${fmtMs(ms / total)}`).join(', ')}`);
  console.log(`write calls per message     ${[...sideUse.writeCalls].map(([name, n]) => `${name} ${(n / total).toFixed(1)}`).join(', ')}`);
  if (seqTrips && sequential > 0) {
    console.log('one at a time:');
    for (const line of formatRoundTrips(seqTrips, sequential, LATENCY_PATH)) console.log(line);
  }
  if (trips) {
    console.log(`${concurrency} concurrent senders:`);
    for (const line of formatRoundTrips(trips, total, LATENCY_PATH)) console.log(line);
  }
  if (streamTrips && streaming) {
    // Per runner event: the snapshots each reply's callbacks carried (26 for 200 deltas) are its events.
    const events = streaming.replies * streaming.callbacksPerReply.expected;
    console.log(`streaming phase, per runner event (${events} events):`);
    for (const line of formatRoundTrips(streamTrips, events, EVENT_DELIVERY)) console.log(line);
  }
  if (streaming) {
    const s = streaming;
    console.log(`streaming                   ${s.replies} replies of ${s.deltas} deltas at ${s.rate} deltas/s, ${s.parallel} at a time, ${s.elapsedS.toFixed(1)} s; failed ${s.failures}, lost finals ${s.lost}`);
    console.log(`delta → callback p50 / p99  ${fmtMs(s.p50)} / ${fmtMs(s.p99)} over ${s.callbacks} callbacks (final part alone p50 ${fmtMs(s.finalP50)})${s.unmatched ? `; ${s.unmatched} callbacks matched no delta` : ''}`);
    console.log(`callbacks per reply         mean ${s.callbacksPerReply.mean.toFixed(1)}, min ${s.callbacksPerReply.min}, max ${s.callbacksPerReply.max} (${s.callbacksPerReply.expected} snapshots emitted per reply)`);
    console.log(`coalescing                  ${s.coalesced > 0 ? `yes: ${s.coalesced} snapshots skipped by the dispatcher` : 'no: every snapshot was sent'}`);
    for (const [name, ms] of Object.entries(s.cpuPerReply)) console.log(`CPU per streamed reply ${name.padEnd(12)} ${fmtMs(ms)}`);
    console.log(`CPU per streamed reply, 4 services ${fmtMs(s.cpuTotal)}; net of their idle cost (${Object.values(s.idleCpuPerSecond).reduce((a, b) => a + b, 0).toFixed(1)} ms/s) ${fmtMs(s.cpuTotalNetOfIdle)}`);
  }
  // One machine-readable line for `npm run bench`, which puts several runs in one table.
  console.log(`RESULT ${JSON.stringify({
    tracing, messages: total, concurrency, failures: failures.length, duplicatedFinals: duplicated, lost: sentAt.size - finalsPerReply.size,
    natsP50: floor, p50: seqP50, p99: percentile(seqLatencies, 99), throughput: total / elapsedS,
    cpuPerMessage: perMessage(cpuMs, total), cpuTotal: cpuTotal / total, cpuBeside: perMessage(sideUse.cpuMs, total),
    ...(streaming ? { streaming } : {}),
  })}`);
  if (failures.length) console.log(`first failure: ${failures[0]}`);
  // Profiles are written when the services exit.
  await sys.stop();
  stopped = true;
  if (profileDir) {
    for (const svc of sys.services.services) {
      const file = readdirSync(profileDir).find((f) => f.includes(`.${svc.child.pid}.`) && f.startsWith('CPU.'));
      if (file) renameSync(path.join(profileDir, file), path.join(profileDir, `${svc.instance}.cpuprofile`));
    }
    // The other files are the module loader's worker threads (start-up only).
    for (const f of readdirSync(profileDir)) if (f.startsWith('CPU.')) rmSync(path.join(profileDir, f));
    console.log(`\nCPU profiles in ${profileDir}\n${summariseFolder(profileDir)}`);
  }
} finally {
  await sender.close();
  if (!stopped) await sys.stop();
  await ownNats?.stop();
  await ownRedis?.stop();
}

