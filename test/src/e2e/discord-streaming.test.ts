import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Deliverer, type BotConfigs, type ReplyRef } from '@conveyor/delivery';
import { DiscordAdapter } from '@conveyor/discord';
import { topology, type ReplyRoute } from '@conveyor/contracts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/index.js';
import { NATS_URL, REDIS_URL } from '../harness/system.js';

/** The Discord streamed outbound against the fake REST API: one message, edits throttled as LangBot, the final edit whole. */
const prefix = `t${randomBytes(5).toString('hex')}`;
const token = 'discord-streaming-token';
let redis: Redis;
let nc: NatsConnection;
let discord: FakeDiscord;

before(async () => {
  redis = new Redis(REDIS_URL);
  nc = await connect({ servers: NATS_URL });
  discord = await startFakeDiscord({ tokens: [token] });
});
after(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await nc.close();
  await discord.close();
});

test('a streamed Discord reply: created with the first snapshot, edited every 8th, the final edit whole; past 2,000 characters more messages', async () => {
  const configs: BotConfigs = { get: async () => ({ adapter: 'discord', adapterConfig: { client_id: '1', token, api_base_url: discord.apiBase, 'enable-stream-reply': true } }) };
  const adapter = new DiscordAdapter({ redis, prefix, topology: topology(prefix), nc, configs, logger: { warn: () => undefined } });
  const d = new Deliverer({ redis, prefix, adapters: [adapter] });
  const channel = '710000000000000001';
  const route: ReplyRoute = { botId: 'dc', adapter: 'discord', sessionId: channel, launcherType: 'group', launcherId: channel, senderId: '1', replyTo: '42' };
  const q = randomUUID();
  let text = '';
  for (let i = 0; i < 20; i++) {
    text += `t${i} `;
    if (i === 19) text += 'x'.repeat(2_500);
    const ref: ReplyRef = { queryId: q, attempt: 1, seq: i, route };
    await d.withReplyRef(ref, () => d.send(route, { message: [{ type: 'Plain', text }], isFinal: i === 19, stream: true }));
    await d.idle();
  }
  await d.withReplyRef({ queryId: q, attempt: 1, seq: 20, route, terminal: true }, async () => undefined);
  await d.idle();
  const posts = discord.calls.filter((c) => c.method === 'POST' && c.path === `/channels/${channel}/messages`);
  assert.equal(posts[0].body.content, 't0 ');
  assert.equal(posts[0].body.message_reference.message_id, '42', 'a reply to the user\'s message');
  const edits = discord.calls.filter((c) => c.method === 'PATCH').map((c) => String(c.body.content));
  // LangBot's rhythm: created with the 1st snapshot, edited with the 9th and 17th, then the final.
  assert.deepEqual(edits.slice(0, 2).map((t) => t.trim().split(' ').length), [9, 17]);
  assert.equal(edits.length, 3);
  const shown = discord.channel(channel).map((m) => m.content);
  assert.equal(shown.length, 2, 'the rest past 2,000 characters in a second message');
  assert.ok(shown.every((c) => c.length <= 2_000));
  assert.equal(shown.join(''), text, 'cut hard where no space is near the limit');
});
