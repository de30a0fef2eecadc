import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Deliverer, type BotConfigs, type ReplyRef } from '@conveyor/delivery';
import { TelegramAdapter } from '@conveyor/telegram';
import type { ReplyRoute } from '@conveyor/contracts';
import { startFakeTelegram, type FakeTelegram } from '../fakes/index.js';
import { REDIS_URL } from '../harness/system.js';

/** The Telegram outbound against the fake Bot API: placeholder, throttled edits as LangBot, final edit. */
const prefix = `t${randomBytes(5).toString('hex')}`;
let redis: Redis;
let tg: FakeTelegram;
const token = '1:tok';

before(async () => {
  redis = new Redis(REDIS_URL);
  tg = await startFakeTelegram({ token, delayMs: 5 });
});
after(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await tg.close();
});

test('a streamed Telegram reply: one Thinking... placeholder, throttled edits, the final edit has the whole text', async () => {
  const configs: BotConfigs = { get: async () => ({ adapter: 'telegram', adapterConfig: { token, webhook_secret: 's', api_base_url: tg.url, 'enable-stream-reply': true } }) };
  const d = new Deliverer({ redis, prefix, adapters: [new TelegramAdapter(configs)] });
  const chatId = 555;
  const route: ReplyRoute = { botId: 'tg', adapter: 'telegram', sessionId: String(chatId), launcherType: 'person', launcherId: String(chatId), senderId: '1', replyTo: '9' };
  const q = randomUUID();
  let text = '';
  for (let i = 0; i < 20; i++) {
    text += `t${i} `;
    const ref: ReplyRef = { queryId: q, attempt: 1, seq: i, route };
    await d.withReplyRef(ref, () => d.send(route, { message: [{ type: 'Plain', text }], isFinal: i === 19, stream: true }));
    // Let each snapshot be sent before the next (a fast platform), so the throttle, not coalescing, decides.
    await d.idle();
  }
  await d.withReplyRef({ queryId: q, attempt: 1, seq: 20, route, terminal: true }, async () => undefined);
  await d.idle();
  const calls = tg.calls.filter((c) => Number(c.params.chat_id) === chatId);
  assert.equal(calls[0].method, 'sendMessage');
  assert.equal(calls[0].params.text, 'Thinking...');
  assert.equal(calls.filter((c) => c.method === 'sendMessage').length, 1, 'one message');
  const edits = calls.filter((c) => c.method === 'editMessageText').map((c) => c.params.text as string);
  // LangBot: the first snapshot, then every 8th ((n-1) % 8 == 0: 1, 9, 17), then the final.
  assert.deepEqual(edits.map((t) => t.trim().split(' ').length), [1, 9, 17, 20]);
  assert.equal(tg.chat(chatId)[0].text, text);
});
