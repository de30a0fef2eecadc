// The streaming phase of bench/e2e: replies of D streamed deltas (the fake model paced at R deltas/s),
// P replies at a time, each in a session of its own. The fake model records when it wrote each content
// delta (FakeResponse.onDelta, performance.now() in this process, where the fakes run) and the callback
// receiver when each callback arrived (same clock). A callback carries the reply's cumulative text: the
// runner emits it every 8 deltas and once more as the final part, and the dispatcher may skip a
// snapshot when a newer one of the same reply is already waiting (coalescing). Delta k writes the word
// `x<k>`, so the last word of a callback's text names the delta that completed it; the latency is the
// callback's arrival minus that delta's write.
import type { TestSystem } from '@conveyor/test';
import { CpuMeter } from './proc-cpu.js';
import { percentile } from './stats.js';

export interface StreamingOptions {
  replies: number;
  parallel: number;
  deltas: number;
  /** Deltas per second the fake model writes. */
  rate: number;
}

export interface StreamingResult extends StreamingOptions {
  /** Callbacks matched to a delta; `unmatched` had a text that is not a prefix of the reply. */
  callbacks: number;
  unmatched: number;
  failures: number;
  /** Replies whose final callback never came. */
  lost: number;
  p50: number;
  p99: number;
  /** Latency of the final callbacks alone (last delta → is_final callback). */
  finalP50: number;
  callbacksPerReply: { mean: number; min: number; max: number; expected: number };
  /** Snapshots the runner emitted that no callback carried (the dispatcher coalesced them). */
  coalesced: number;
  cpuPerReply: Record<string, number>;
  cpuTotal: number;
  /** CPU the services use idle (ms per second, measured just before the phase) and the total net of it. */
  idleCpuPerSecond: Record<string, number>;
  cpuTotalNetOfIdle: number;
  elapsedS: number;
}

/** The runner's accumulator emits every 8 deltas and a final snapshot (libs/agent/src/stream-accumulator.ts). */
const EMIT_EVERY = 8;
const TAG = /stream-reply-(\d+)/;

const textOf = (json: any): string =>
  (Array.isArray(json?.message) ? json.message : []).filter((c: any) => c?.type === 'Plain').map((c: any) => c.text ?? '').join('');

export async function measureStreaming(sys: TestSystem, cpu: CpuMeter, o: StreamingOptions): Promise<StreamingResult> {
  const words = Array.from({ length: o.deltas }, (_, i) => `x${i + 1}`);
  const text = words.join(' ');
  // Write time of delta k (1-based) of reply i.
  const written = Array.from({ length: o.replies }, () => new Float64Array(o.deltas + 1).fill(NaN));
  sys.llm.setDefault((body) => {
    const m = TAG.exec(JSON.stringify(body.messages?.at(-1) ?? ''));
    const i = m ? Number(m[1]) : -1;
    if (!(i >= 0 && i < o.replies)) return { text: 'ok' };
    return { text, tokensPerSecond: o.rate, onDelta: (k, at) => void (written[i][k] = at) };
  });

  const replyIndex = new Map<string, number>();
  let failures = 0;
  let next = 0;
  const runTag = Date.now().toString(36);
  // Replies whose final callback arrived, updated incrementally (the receiver holds every earlier phase's callbacks too).
  const finals = new Set<string>();
  let scanned = 0;
  const finalOf = (replyTo: string) => {
    const all = sys.callbacks.received;
    for (; scanned < all.length; scanned++) if (all[scanned].json?.is_final) finals.add(all[scanned].json.reply_to);
    return finals.has(replyTo);
  };

  // The phase is paced by the model, so the services' idle cost (timers, heartbeats) is in its CPU too.
  const IDLE_MS = 3_000;
  cpu.start();
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idle = cpu.stop();
  cpu.start();
  const started = performance.now();
  await Promise.all(Array.from({ length: o.parallel }, async () => {
    while (next < o.replies) {
      const i = next++;
      const res = await sys.post({ session_id: `stream-${runTag}-${i}`, message: [{ type: 'Plain', text: `stream-reply-${i}` }] });
      const body = (await res.json()) as { data?: { accepted_message_id: string } };
      if (res.status !== 202 || !body.data) {
        failures++;
        continue;
      }
      const id = body.data.accepted_message_id;
      replyIndex.set(id, i);
      // Generous: a reply takes deltas / rate seconds.
      await sys.callbacks.waitFor(() => finalOf(id), 60_000 + (o.deltas / o.rate) * 4_000).catch(() => undefined);
    }
  }));
  const elapsedS = (performance.now() - started) / 1000;
  const cpuMs = cpu.stop();
  sys.llm.setDefault({ text: 'ok' });

  const latencies: number[] = [];
  const finalLatencies: number[] = [];
  let unmatched = 0;
  const perReply = new Map<string, Set<string>>();
  const seenDeltas = new Map<string, Set<string>>();
  for (const c of sys.callbacks.received) {
    const replyTo: string | undefined = c.json?.reply_to;
    const i = replyTo === undefined ? undefined : replyIndex.get(replyTo);
    if (i === undefined) continue;
    // A part re-sent after a failure is byte-identical; count it once.
    const raw = c.rawBody.toString('utf8');
    const parts = perReply.get(replyTo!) ?? new Set<string>();
    if (parts.has(raw)) continue;
    parts.add(raw);
    perReply.set(replyTo!, parts);
    const t = textOf(c.json).trim();
    const k = Number(/x(\d+)$/.exec(t)?.[1] ?? NaN);
    if (!(k >= 1 && k <= o.deltas) || t !== words.slice(0, k).join(' ') || !Number.isFinite(written[i][k])) {
      unmatched++;
      continue;
    }
    const seen = seenDeltas.get(replyTo!) ?? new Set<string>();
    seen.add(`${c.json.is_final ? 'final' : 'part'}:${k}`);
    seenDeltas.set(replyTo!, seen);
    const latency = c.receivedAt - written[i][k];
    latencies.push(latency);
    if (c.json.is_final) finalLatencies.push(latency);
  }

  // Without coalescing every snapshot the runner emitted arrives: one per EMIT_EVERY deltas, and the final.
  const emitted = [...Array.from({ length: Math.floor(o.deltas / EMIT_EVERY) }, (_, j) => `part:${(j + 1) * EMIT_EVERY}`), `final:${o.deltas}`];
  let coalesced = 0;
  for (const replyTo of replyIndex.keys()) {
    const seen = seenDeltas.get(replyTo) ?? new Set<string>();
    if (!seen.has(`final:${o.deltas}`)) continue; // lost, counted below
    coalesced += emitted.filter((e) => !seen.has(e)).length;
  }
  const counts = [...replyIndex.keys()].map((r) => perReply.get(r)?.size ?? 0);
  const lost = [...replyIndex.keys()].filter((r) => !finalOf(r)).length;
  let cpuTotal = 0;
  for (const ms of cpuMs.values()) cpuTotal += ms;
  const replies = Math.max(1, replyIndex.size);
  return {
    ...o,
    callbacks: latencies.length,
    unmatched,
    failures,
    lost,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    finalP50: percentile(finalLatencies, 50),
    callbacksPerReply: {
      mean: counts.reduce((a, b) => a + b, 0) / Math.max(1, counts.length),
      min: Math.min(...counts),
      max: Math.max(...counts),
      expected: emitted.length,
    },
    coalesced,
    cpuPerReply: Object.fromEntries([...cpuMs].map(([name, ms]) => [name, ms / replies])),
    cpuTotal: cpuTotal / replies,
    idleCpuPerSecond: Object.fromEntries([...idle].map(([name, ms]) => [name, ms / (IDLE_MS / 1000)])),
    cpuTotalNetOfIdle: (cpuTotal - ([...idle.values()].reduce((a, b) => a + b, 0) / IDLE_MS) * elapsedS * 1000) / replies,
    elapsedS,
  };
}
