import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OneBotSocket, type Frame } from '@conveyor/onebot';
import { startFakeOneBot } from './onebot-server.js';

test('fake OneBot: refuses a wrong access token, pushes lifecycle and message events, answers actions by echo', async () => {
  const fake = await startFakeOneBot({ accessToken: 'secret-token', heartbeatMs: 200 });
  try {
    await assert.rejects(OneBotSocket.connect({ url: fake.url, accessToken: 'wrong', onFrame: () => undefined }), /HTTP 401/);
    assert.equal(fake.connections.refused, 1);
    const frames: Exclude<Frame, { kind: 'response' }>[] = [];
    // Emitted before anyone listens: kept for the first client.
    const early = fake.emitMessage({ messageType: 'private', userId: 42, message: [{ type: 'text', data: { text: 'early' } }] });
    const socket = await OneBotSocket.connect({ url: fake.url, accessToken: 'secret-token', onFrame: (f) => frames.push(f) });
    try {
      fake.emitMessage({ messageType: 'group', userId: 43, groupId: 7, message: '[CQ:at,qq=10001] hi', card: 'C' });
      const deadline = Date.now() + 10_000;
      while (frames.filter((f) => f.kind === 'message').length < 2 || !frames.some((f) => f.kind === 'meta' && f.type === 'heartbeat')) {
        if (Date.now() > deadline) throw new Error(`frames so far: ${JSON.stringify(frames)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(frames[0], { kind: 'meta', type: 'lifecycle', subType: 'connect' });
      const messages = frames.flatMap((f) => (f.kind === 'message' ? [f.event] : []));
      assert.equal(messages[0].message_id, String(early));
      assert.equal(messages[1].group_id, '7');
      const sent = await socket.call('send_msg', { message_type: 'group', group_id: 7, message: [{ type: 'text', data: { text: 'yo' } }] });
      assert.ok(typeof (sent as { message_id?: unknown }).message_id === 'number');
      assert.deepEqual(fake.sent()[0].params, { message_type: 'group', group_id: 7, message: [{ type: 'text', data: { text: 'yo' } }] });
      await assert.rejects(socket.call('no_such_action', {}), { code: 'ONEBOT_ACTION_FAILED', retcode: 1404 });
      assert.equal(fake.connections.maxOpen, 1);
    } finally {
      await socket.close('test over');
    }
    await fake.waitForConnections((c) => c.open === 0);
  } finally {
    await fake.close();
  }
});
