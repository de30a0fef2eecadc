// bench/redis-footprint: what Redis holds per message once its reply went out, and for how long, so
// that an operator can size Redis by the message rate. The whole system runs against a Redis of its
// own; N short messages go through C chats; once every reply has ended, every key the run left is
// read with MEMORY USAGE and PTTL and grouped by kind (ids and shard numbers taken out of the name).
//
// Usage: npm run bench:redis-footprint -- [messages=1000] [chats=50] [--tracing=0.1]
//
// Per kind: keys, bytes, the longest TTL left. The total is given per message and as what a steady
// rate keeps in Redis: the sum over keys of bytes × TTL left, per message, is the bytes held for every
// message per second sustained. Keys of a chat (its finished set, its rate window) are shared by the
// chat's messages: with more messages per chat they weigh less per message.
import { Redis } from 'ioredis';
import { startOwnedRedis, startTestSystem } from '@conveyor/test';
import { SignedSender } from './signed-sender.js';
import { commandLine } from './command-line.js';

const { flags, positional } = commandLine();
const total = Number(positional[0] ?? 1000);
const chats = Number(positional[1] ?? 50);
const tracing = flags.get('tracing') ?? '0.1';
/** Senders at once: enough to keep every chat busy, few enough not to measure queueing. */
const CONCURRENCY = 16;
/** How long the run may take to answer every message and close every reply. */
const DEADLINE_MS = 300_000;
const SCAN_BATCH = 1000;

const ownRedis = await startOwnedRedis();
const sys = await startTestSystem({
  serviceEnv: { LOG_LEVEL: 'warn', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: tracing, OTEL_BSP_SCHEDULE_DELAY: '1000' },
  redisUrl: ownRedis.url,
});
const redis = new Redis(ownRedis.url);
const sender = new SignedSender(sys, CONCURRENCY);

/** Every key of the run's Redis, by SCAN. */
async function allKeys(match = '*'): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', match, 'COUNT', SCAN_BATCH);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** A key's kind: its name with the run's prefix, ids, chat names and shard numbers taken out. */
function kindOf(key: string): string {
  return key
    .replaceAll(sys.prefix, '<prefix>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/footprint-\d+/g, '<chat>')
    .replace(/\{d\d+\}/g, '{d<N>}')
    .replace(/\{p\d+\}/g, '{p<N>}')
    .replace(/:q:\d+$/, ':q:<window>');
}

try {
  sys.llm.setDefault({ text: 'ok' });
  const accepted = new Set<string>();
  let next = 0;
  const sendAll = async () => {
    for (let i = next++; i < total; i = next++) {
      const res = await sender.send({ session_id: `footprint-${i % chats}`, message: [{ type: 'Plain', text: `message ${i}` }] });
      if (res.acceptedId === undefined) throw new Error(`message ${i} refused: ${res.status} ${JSON.stringify(res.body)}`);
      accepted.add(res.acceptedId);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, sendAll));
  await sys.callbacks.waitFor((received) => new Set(received.filter((c) => c.json?.is_final === true).map((c) => c.json?.reply_to)).size >= accepted.size, DEADLINE_MS);
  // The last batch of a reply is recorded (and the reply closed) after its callback was answered.
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const replies = await allKeys(`${sys.prefix}:dlv:*:r:*`);
    const open = (await Promise.all(replies.map((k) => redis.hget(k, 'closed')))).filter((c) => c !== '1').length;
    if (replies.length >= accepted.size && open === 0) break;
    if (Date.now() > deadline) throw new Error(`${open} of ${replies.length} replies still open`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const kinds = new Map<string, { keys: number; bytes: number; byteSeconds: number; ttlMs: number }>();
  for (const key of await allKeys()) {
    const [bytes, ttl] = await Promise.all([redis.memory('USAGE', key), redis.pttl(key)]);
    const kind = kindOf(key);
    const k = kinds.get(kind) ?? { keys: 0, bytes: 0, byteSeconds: 0, ttlMs: 0 };
    k.keys++;
    k.bytes += bytes ?? 0;
    k.byteSeconds += ttl > 0 ? ((bytes ?? 0) * ttl) / 1000 : 0;
    k.ttlMs = ttl < 0 ? -1 : Math.max(k.ttlMs, ttl);
    kinds.set(kind, k);
  }
  const rows = [...kinds].sort((a, b) => b[1].byteSeconds - a[1].byteSeconds);
  const sum = rows.reduce((s, [, k]) => ({ bytes: s.bytes + k.bytes, byteSeconds: s.byteSeconds + k.byteSeconds }), { bytes: 0, byteSeconds: 0 });
  const ttl = (ms: number) => (ms < 0 ? 'none' : `${(ms / 3_600_000).toFixed(1)} h`);
  console.log(`${total} messages in ${chats} chats, tracing ${tracing}: Redis holds ${sum.bytes} bytes once every reply ended, ${(sum.bytes / total).toFixed(0)} per message`);
  console.log(`held for every message per second sustained: ${(sum.byteSeconds / total / 1e6).toFixed(1)} MB (at 250 messages/s: ${((sum.byteSeconds / total) * 250 / 1e9).toFixed(2)} GB)`);
  console.log('');
  console.log('| keys of this kind | keys | bytes | bytes per message | longest TTL left | MB per message/s sustained |');
  console.log('|---|---|---|---|---|---|');
  for (const [kind, k] of rows) console.log(`| \`${kind}\` | ${k.keys} | ${k.bytes} | ${(k.bytes / total).toFixed(0)} | ${ttl(k.ttlMs)} | ${(k.byteSeconds / total / 1e6).toFixed(2)} |`);
  console.log(`RESULT ${JSON.stringify({ messages: total, chats, tracing, bytes: sum.bytes, bytesPerMessage: sum.bytes / total, mbPerMessagePerSecond: sum.byteSeconds / total / 1e6 })}`);
} finally {
  redis.disconnect();
  await sender.close();
  await sys.stop();
  await ownRedis.stop();
}
