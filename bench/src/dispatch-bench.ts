// Dispatcher delivery benchmark: updates/s to a fast platform, and the fraction of streamed snapshots
// coalesced away when the platform takes 200 ms per edit. Real Redis, in-process Deliverer.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Deliverer, type PlatformAdapter, type ReplyRef } from '@conveyor/delivery';
import type { ReplyRoute } from '@conveyor/contracts';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `bench${randomBytes(4).toString('hex')}`;
const adapter = (ms: number): PlatformAdapter => ({ name: 'http-bot', async deliver() { if (ms) await delay(ms); return { delivered: true }; } });
const route = (s: string): ReplyRoute => ({ botId: 'b', adapter: 'http-bot', sessionId: s, launcherType: 'person', launcherId: s, senderId: s, replyTo: 'in_x' });

async function run(label: string, platformMs: number, sessions: number, snapshots: number, gapMs: number) {
  const d = new Deliverer({ redis, prefix, adapters: [adapter(platformMs)] });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: sessions }, async (_, k) => {
    const r = route(`s${k}-${randomUUID()}`);
    const q = randomUUID();
    let text = '';
    for (let i = 0; i < snapshots; i++) {
      text += 'x';
      const ref: ReplyRef = { queryId: q, attempt: 1, seq: i, route: r };
      await d.withReplyRef(ref, () => d.send(r, { message: [{ type: 'Plain', text }], isFinal: i === snapshots - 1, stream: true }));
      if (gapMs) await delay(gapMs);
    }
  }));
  await d.idle();
  const secs = (performance.now() - t0) / 1000;
  const total = sessions * snapshots;
  console.log(`${label}: ${total} snapshots in ${secs.toFixed(2)} s = ${(total / secs).toFixed(0)} updates/s handled; sent ${d.stats.sent}, coalesced ${d.stats.coalesced} (${((100 * d.stats.coalesced) / total).toFixed(1)} %)`);
}

await run('fast platform (0 ms), 50 sessions x 100 snapshots', 0, 50, 100, 0);
await run('slow platform (200 ms/edit), 10 sessions x 100 snapshots every 20 ms', 200, 10, 100, 20);
const keys = await redis.keys(`${prefix}:*`);
if (keys.length) await redis.del(...keys);
redis.disconnect();
