import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InboundQuery } from '@conveyor/platform-kit';
import { LarkConfigSchema, LarkEndpointError, larkConnection } from '@conveyor/lark';
import { startFakeLark } from './lark-server.js';

const BOT = '00000000-0000-4000-8000-00000000000a';

test('fake Lark long connection: a wrong secret is refused by code; events are published and acked, send replies, close ends it', async () => {
  const fake = await startFakeLark({ appId: 'cli_conn', appSecret: 'conn-secret', pingIntervalSeconds: 1 });
  const published: InboundQuery[] = [];
  const malformed: string[] = [];
  const deps = (appSecret: string) => ({
    botId: BOT,
    config: LarkConfigSchema.parse({ app_id: 'cli_conn', app_secret: appSecret, bot_name: 'Bot', domain: 'custom', custom_domain: fake.url }),
    logger: { info: () => {}, warn: () => {} },
    fence: async () => 1,
    state: () => {
      throw new Error('the long connection keeps no state');
    },
    publish: async (q: InboundQuery) => void published.push(q),
    malformed: (reason: string) => void malformed.push(reason),
  });
  try {
    await assert.rejects(larkConnection.open(deps('wrong')), (err: unknown) => err instanceof LarkEndpointError && err.larkCode === 514);
    const conn = await larkConnection.open(deps('conn-secret'));
    await fake.waitForWs((w) => w.open === 1, 10_000);
    const event = {
      schema: '2.0',
      header: { event_id: 'ev_conn_1', event_type: 'im.message.receive_v1' },
      event: {
        sender: { sender_id: { open_id: 'ou_a' }, sender_type: 'user' },
        message: { message_id: 'om_conn_1', chat_id: 'oc_a', chat_type: 'p2p', message_type: 'text', content: JSON.stringify({ text: 'hi' }) },
      },
    };
    const frameId = fake.emitEvent(event, { parts: 2 });
    await fake.waitForWs((w) => w.frames.some((f) => f.type === 'ack' && f.messageId === frameId), 10_000);
    assert.equal(published.length, 1);
    assert.equal(published[0]?.dedupId, 'ev_conn_1');
    assert.deepEqual(published[0]?.messageChain, [{ type: 'Plain', text: 'hi' }]);
    assert.deepEqual(malformed, []);
    const sent = await conn.send({ adapter: 'lark', botId: BOT, sessionId: 'ou_a', launcherType: 'person', launcherId: 'ou_a', senderId: 'ou_a', replyTo: 'om_conn_1' }, [{ type: 'Plain', text: 'hello back' }]);
    assert.ok(sent.messageId);
    assert.deepEqual(fake.repliesTo('om_conn_1').map((m) => m.text), ['hello back']);
    await conn.close('test over');
    assert.match(await conn.ended, /test over/);
    await fake.waitForWs((w) => w.open === 0, 10_000);
  } finally {
    await fake.close();
  }
});
