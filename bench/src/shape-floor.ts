// npm run bench:floor -- [messages=10000] [concurrency=64] [--state] [--openai] [--stream] [--warmup=1000]
//
// The cost of the product's shape with none of the product in it: four processes joined by three
// JetStream streams, as ingress → orchestrator → runner → dispatcher are, each doing only its hop.
//   ingress       node:http POST → JetStream publish (awaiting the ack, with a message id) → 202
//   orchestrator  pull → publish to the next stream → ack
//   runner        pull → one HTTP call to a fake model (undici keep-alive pool; --openai: the openai
//                 SDK's chat.completions.create, as the product's runner) → publish → ack
//   dispatcher    pull → one HTTP POST to the callback receiver (undici keep-alive pool) → ack
// --state adds the product's per-message state round trips as bare calls of the same kind and count,
// where the product makes them (`--round-trips` of bench:e2e counts the product's): ingress 1 Redis
// script after the publish (the session registration); orchestrator 1 script (admission) and 1
// Postgres read (the chat's history); runner 1 script (the run's attempt) and 1 Postgres statement
// (the turn, before the answer or a streamed reply's final part is published); dispatcher 1 script
// before the callback (delivery, which ends the session's turn with the last event) and 1 after it
// (the commit).
// What the product spends beyond this variant is its own code, not the state it must keep.
// --stream adds a streaming phase after the throughput phase, shaped as bench:e2e's (--stream-replies,
// --stream-parallel, --stream-deltas, --stream-rate, the same defaults): the runner asks the model with
// `stream: true` through the openai SDK, publishes the reply's text so far every 8 deltas and once
// more as the final part, and the dispatcher posts each to the callback receiver in order; the
// latency of a callback is its arrival minus the write of the delta that completed its text.
//
// The fake model and the callback receiver run in this process, the four hops in processes of their
// own; CPU per message is read from each hop's /proc/<pid>/stat around the throughput phase, as in
// e2e.ts. The difference between this and `npm run bench:e2e` is what the product's own code costs.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Pool } from 'undici';
import { CpuMeter, perMessage, SideMeter } from './proc-cpu.js';
import { percentile, WARMUP_MESSAGES } from './stats.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.FLOOR_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const HOPS = ['ingress', 'orchestrator', 'runner', 'dispatcher'] as const;
type Hop = (typeof HOPS)[number];

/** What every hop process is told by the bench, through its environment. */
interface HopConfig {
  id: string;
  state: boolean;
  openai: boolean;
  modelUrl: string;
  callbackUrl: string;
  table: string;
}

const subjects = (id: string) => ({ inbound: `floor.${id}.inbound`, runs: `floor.${id}.runs`, events: `floor.${id}.events` });
const streams = (id: string) => ({ inbound: `FLOOR_${id}_INBOUND`, runs: `FLOOR_${id}_RUNS`, events: `FLOOR_${id}_EVENTS` });

/** Bounded concurrent handling of a pull consumer's messages, acked plainly once handled. */
async function consumeAll(nc: NatsConnection, stream: string, handle: (m: JsMsg) => Promise<void>, inflight = 64): Promise<void> {
  const consumer = await jetstream(nc).consumers.get(stream, 'floor');
  const messages = await consumer.consume({ max_messages: inflight });
  let running = 0;
  let freed: (() => void) | undefined;
  for await (const m of messages) {
    running++;
    void handle(m).then(() => m.ack(), (err) => { console.error(err); m.nak(); }).finally(() => {
      running--;
      freed?.();
    });
    while (running >= inflight) await new Promise<void>((resolve) => (freed = resolve));
  }
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

async function runHop(hop: Hop, c: HopConfig): Promise<void> {
  const nc = await connect({ servers: NATS_URL, noAsyncTraces: true });
  const js = jetstream(nc);
  const sub = subjects(c.id);
  const redis = c.state ? new Redis(REDIS_URL, { enableAutoPipelining: true }) : undefined;
  const db = c.state ? new pg.Pool({ connectionString: DATABASE_URL, max: 10 }) : undefined;
  // One trivial script, called as the product calls its Lua scripts (EVALSHA of a loaded script).
  const sha = redis ? String(await redis.script('LOAD', "return redis.call('INCR', KEYS[1])")) : '';
  const script = async (times: number, key: string) => {
    for (let i = 0; i < times; i++) await redis!.evalsha(sha, 1, key);
  };
  const publish = (subject: string, body: string, msgID: string) => js.publish(subject, body, { msgID });

  if (hop === 'ingress') {
    const server = http.createServer(async (req, res) => {
      const body = JSON.parse(await readBody(req)) as { id: string };
      await publish(sub.inbound, JSON.stringify({ ...body, receivedAt: Date.now() }), body.id);
      if (c.state) await script(1, `floor:${c.id}:${body.id}`);
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 0, data: { accepted_message_id: body.id } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    process.stdout.write(`ready ${(server.address() as AddressInfo).port}\n`);
    return;
  }

  process.stdout.write('ready\n');
  if (hop === 'orchestrator') {
    await consumeAll(nc, streams(c.id).inbound, async (m) => {
      const msg = m.json<{ id: string; text: string }>();
      if (c.state) {
        await script(1, `floor:${c.id}:${msg.id}`);
        await db!.query('SELECT "id", "body" FROM ' + c.table + ' WHERE "id" = $1', [msg.id]);
      }
      await publish(sub.runs, JSON.stringify({ ...msg, history: [], model: 'fake' }), msg.id);
    });
  } else if (hop === 'runner') {
    const modelPool = new Pool(c.modelUrl, { connections: 64 });
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ baseURL: `${c.modelUrl}/v1`, apiKey: 'floor', maxRetries: 0 });
    const messages = (text: string) => [{ role: 'user' as const, content: text }];
    await consumeAll(nc, streams(c.id).runs, async (m) => {
      const run = m.json<{ id: string; text: string; stream?: boolean }>();
      if (c.state) await script(1, `floor:${c.id}:${run.id}`);
      if (run.stream) {
        // As the product's runner: the text so far every EMIT_EVERY deltas, then the final part.
        const stream = await client.chat.completions.create({ model: 'fake', messages: messages(run.id), stream: true });
        let text = '';
        let deltas = 0;
        let seq = 0;
        for await (const chunk of stream) {
          const delta = chunk.choices[0]?.delta.content;
          if (!delta) continue;
          text += delta;
          if (++deltas % EMIT_EVERY === 0) await publish(sub.events, JSON.stringify({ id: run.id, text, last: false }), `${run.id}:${seq++}`);
        }
        // The turn goes to history before the final part, as the product's final answer waits for it.
        if (c.state) await db!.query('INSERT INTO ' + c.table + ' ("id", "body") VALUES ($1, $2)', [run.id, JSON.stringify({ answer: text })]);
        await publish(sub.events, JSON.stringify({ id: run.id, text, last: true }), `${run.id}:${seq}`);
        return;
      }
      let answer: string;
      if (c.openai) {
        const completion = await client.chat.completions.create({ model: 'fake', messages: messages(run.text) });
        answer = completion.choices[0]?.message.content ?? '';
      } else {
        const res = await modelPool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake', messages: messages(run.text) }) });
        answer = ((await res.body.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
      }
      if (c.state) await db!.query('INSERT INTO ' + c.table + ' ("id", "body") VALUES ($1, $2)', [run.id, JSON.stringify({ answer })]);
      await publish(sub.events, JSON.stringify({ id: run.id, kind: 'message', text: answer, last: true }), run.id);
    });
  } else {
    const callbackPool = new Pool(c.callbackUrl, { connections: 64 });
    // A reply's parts go out in the order they arrive, as the product sends them.
    const perReply = new Map<string, Promise<void>>();
    await consumeAll(nc, streams(c.id).events, async (m) => {
      const event = m.json<{ id: string; text: string; last?: boolean }>();
      const send = async () => {
        if (c.state) await script(1, `floor:${c.id}:${event.id}`);
        const callback = async () => {
          const res = await callbackPool.request({ path: '/callback', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ reply_to: event.id, is_final: event.last !== false, message: [{ type: 'Plain', text: event.text }] }) });
          await res.body.dump();
        };
        if (c.state) {
          await callback();
          await script(1, `floor:${c.id}:${event.id}`);
        } else {
          await callback();
        }
      };
      const sent = (perReply.get(event.id) ?? Promise.resolve()).then(send);
      perReply.set(event.id, sent);
      try {
        await sent;
      } finally {
        if (perReply.get(event.id) === sent) perReply.delete(event.id);
      }
    });
  }
}

/** Deltas per snapshot the runner publishes, as the product's stream accumulator. */
const EMIT_EVERY = 8;

// ---- the bench process: the fakes, the load, the measurement ----

function listen(handler: http.RequestListener): Promise<http.Server> {
  const server = http.createServer(handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
const urlOf = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

function startHop(hop: Hop, config: HopConfig): Promise<{ child: ChildProcess; port?: number }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), `--hop=${hop}`], {
    env: { ...process.env, FLOOR_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => {
      const port = Number(d.toString().split(' ')[1]);
      resolve({ child, ...(port ? { port } : {}) });
    });
    child.once('exit', (code) => reject(new Error(`${hop} exited ${code}`)));
  });
}

async function bench(): Promise<void> {
  const args = process.argv.slice(2);
  const positional = args.filter((a) => !a.startsWith('--'));
  const total = Number(positional[0] ?? 10_000);
  const concurrency = Number(positional[1] ?? 64);
  const id = randomUUID().replaceAll('-', '').slice(0, 12);
  const id8 = () => randomUUID().slice(0, 8);
  const config: HopConfig = { id, state: args.includes('--state'), openai: args.includes('--openai'), modelUrl: '', callbackUrl: '', table: `"floor_${id}"` };

  const withStream = args.includes('--stream');
  const flag = (name: string, fallback: number) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
  const streamOpts = { replies: flag('stream-replies', 60), parallel: flag('stream-parallel', 4), deltas: flag('stream-deltas', 200), rate: flag('stream-rate', 50) };
  if (withStream && !config.openai) throw new Error('--stream calls the model through the openai SDK: pass --openai too');
  /** When the fake model wrote each delta of each streamed reply (performance.now()). */
  const deltaWrites = new Map<string, number[]>();
  /** Each callback of a streamed reply: its arrival, whether final, and the last word of its text. */
  const streamCallbacks: { id: string; at: number; final: boolean; lastWord: string }[] = [];
  const streamFinals = new Map<string, () => void>();

  const answered = new Set<string>();
  let waiter: { count: number; resolve: () => void } | undefined;
  const model = await listen(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { model: string; stream?: boolean; messages: { content: string }[] };
    if (body.stream) {
      const id = body.messages.at(-1)?.content ?? '';
      const writes: number[] = [];
      deltaWrites.set(id, writes);
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-floor', object: 'chat.completion.chunk', created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (let k = 0; k < streamOpts.deltas; k++) {
        await new Promise((resolve) => setTimeout(resolve, 1000 / streamOpts.rate));
        res.write(chunk({ content: `${k === 0 ? '' : ' '}x${k}` }, null));
        writes.push(performance.now());
      }
      res.end(chunk({}, 'stop') + 'data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      id: 'chatcmpl-floor', object: 'chat.completion', created: 0, model: body.model,
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }));
  });
  const callbacks = await listen(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { reply_to: string; is_final: boolean; message: { text: string }[] };
    if (deltaWrites.has(body.reply_to)) {
      streamCallbacks.push({ id: body.reply_to, at: performance.now(), final: body.is_final, lastWord: body.message[0]?.text.split(' ').at(-1) ?? '' });
      if (body.is_final) streamFinals.get(body.reply_to)?.();
    }
    answered.add(body.reply_to);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"code":0}');
    if (waiter && answered.size >= waiter.count) waiter.resolve();
  });
  config.modelUrl = urlOf(model);
  config.callbackUrl = urlOf(callbacks);

  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const names = streams(id);
  const subs = subjects(id);
  for (const key of ['inbound', 'runs', 'events'] as const) {
    await jsm.streams.add({ name: names[key], subjects: [subs[key]], max_msgs: 1_000_000, duplicate_window: 120_000_000_000 });
    await jsm.consumers.add(names[key], { durable_name: 'floor', ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, max_ack_pending: 10_000 });
  }
  const db = config.state ? new pg.Pool({ connectionString: DATABASE_URL, max: 2 }) : undefined;
  await db?.query(`CREATE TABLE ${config.table} ("id" text PRIMARY KEY, "body" jsonb NOT NULL)`);

  const hops = new Map<Hop, { child: ChildProcess; port?: number }>();
  try {
    for (const hop of HOPS) hops.set(hop, await startHop(hop, config));
    const ingress = new Pool(`http://127.0.0.1:${hops.get('ingress')!.port}`, { connections: concurrency });
    let n = 0;
    const send = async () => {
      const res = await ingress.request({ path: '/message', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: `m${n++}`, session_id: `s${n % 1000}`, text: `message ${n}`.padEnd(600, '.') }) });
      await res.body.dump();
      if (res.statusCode !== 202) throw new Error(`ingress answered ${res.statusCode}`);
    };
    const pushAll = async (count: number) => {
      let left = count;
      await Promise.all(Array.from({ length: concurrency }, async () => { while (left-- > 0) await send(); }));
    };
    const allAnswered = (count: number) => new Promise<void>((resolve, reject) => {
      if (answered.size >= count) return resolve();
      waiter = { count, resolve };
      setTimeout(() => reject(new Error(`${answered.size} of ${count} answered after 10 minutes`)), 600_000).unref();
    });

    const warmup = Math.min(flag('warmup', WARMUP_MESSAGES), total);
    await pushAll(warmup);
    await allAnswered(warmup);

    // One at a time: POST → callback.
    const latencies: number[] = [];
    for (let i = 0; i < 200; i++) {
      // The callback can arrive before the 202 does, so the count to wait for is taken first.
      const next = answered.size + 1;
      const t = performance.now();
      await send();
      await allAnswered(next);
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);

    const cpu = new CpuMeter(new Map([...hops].map(([hop, h]) => [hop, h.child.pid!])));
    const side = new SideMeter(new Map([...hops].map(([hop, h]) => [hop, h.child.pid!])));
    const before = answered.size;
    side.start();
    cpu.start();
    const started = performance.now();
    await pushAll(total);
    await allAnswered(before + total);
    const seconds = (performance.now() - started) / 1000;
    const used = cpu.stop();
    const sideUse = side.stop();

    // Streaming: each reply's deltas paced by the model, `parallel` replies at a time.
    let streaming: { replies: number; callbacks: number; p50: number; p99: number; finalP50: number } | undefined;
    if (withStream) {
      let next = 0;
      const streamOne = async () => {
        const replyId = `st-${id8()}-${next++}`;
        const final = new Promise<void>((resolve) => streamFinals.set(replyId, resolve));
        deltaWrites.set(replyId, []);
        const res = await ingress.request({ path: '/message', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: replyId, session_id: replyId, text: replyId, stream: true }) });
        await res.body.dump();
        await final;
      };
      await Promise.all(Array.from({ length: streamOpts.parallel }, async () => { while (next < streamOpts.replies) await streamOne(); }));
      const latencies: number[] = [];
      const finalLatencies: number[] = [];
      for (const cb of streamCallbacks) {
        const k = Number(/^x(\d+)$/.exec(cb.lastWord)?.[1]);
        const wrote = deltaWrites.get(cb.id)?.[k];
        if (wrote === undefined) continue;
        latencies.push(cb.at - wrote);
        if (cb.final) finalLatencies.push(cb.at - wrote);
      }
      streaming = { replies: streamOpts.replies, callbacks: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), finalP50: percentile(finalLatencies, 50) };
    }

    const hopCpu = perMessage(used, total);
    const cpuTotal = Object.values(hopCpu).reduce((a, b) => a + b, 0);
    const variant = `${config.state ? 'with the state round trips' : 'bare hops'}, model call by ${config.openai ? 'the openai SDK' : 'undici'}`;
    console.log(`shape floor: ${variant}`);
    console.log(`messages                    ${total}, all answered`);
    console.log(`throughput                  ${(total / seconds).toFixed(0)} messages/s (${concurrency} concurrent senders)`);
    console.log(`one at a time p50 / p99     ${latencies[100]!.toFixed(2)} / ${latencies[197]!.toFixed(2)} ms`);
    for (const hop of HOPS) console.log(`CPU per message ${hop.padEnd(12)} ${hopCpu[hop]!.toFixed(2)} ms`);
    console.log(`CPU per message, 4 hops     ${cpuTotal.toFixed(2)} ms`);
    console.log(`CPU per message beside them ${[...sideUse.cpuMs].map(([name, ms]) => `${name} ${(ms / total).toFixed(2)} ms`).join(', ')}`);
    console.log(`write calls per message     ${[...sideUse.writeCalls].map(([name, n]) => `${name} ${(n / total).toFixed(1)}`).join(', ')}`);
    if (streaming) {
      console.log(`streaming                   ${streaming.replies} replies of ${streamOpts.deltas} deltas at ${streamOpts.rate} deltas/s, ${streamOpts.parallel} at a time`);
      console.log(`delta → callback p50 / p99  ${streaming.p50.toFixed(2)} / ${streaming.p99.toFixed(2)} ms (${streaming.callbacks} callbacks), final part p50 ${streaming.finalP50.toFixed(2)} ms`);
    }
    console.log(`RESULT ${JSON.stringify({ variant, messages: total, throughput: total / seconds, p50: latencies[100], p99: latencies[197], cpuPerMessage: hopCpu, cpuTotal, cpuBeside: perMessage(sideUse.cpuMs, total), ...(streaming ? { streaming } : {}) })}`);
    await ingress.close();
  } finally {
    for (const { child } of hops.values()) child.kill('SIGKILL');
    for (const key of ['inbound', 'runs', 'events'] as const) await jsm.streams.delete(names[key]).catch(() => false);
    await db?.query(`DROP TABLE IF EXISTS ${config.table}`);
    if (config.state) {
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`floor:${id}:*`);
      for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
      redis.disconnect();
    }
    await db?.end();
    await nc.close();
    for (const server of [model, callbacks]) {
      server.closeAllConnections();
      server.close();
    }
  }
}

const isHop = (name: string | undefined): name is Hop => HOPS.some((h) => h === name);
const hopArg = process.argv.find((a) => a.startsWith('--hop='))?.slice('--hop='.length);
if (isHop(hopArg)) await runHop(hopArg, JSON.parse(process.env.FLOOR_CONFIG ?? '{}') as HopConfig);
else await bench();
