import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ReplyRoute } from '@conveyor/contracts';
import { directRoute, sendToChat } from './direct-send.js';

test('a direct message goes to the chat id as the session, quoting nothing, whole; unknown, disabled and refused sends say why', async () => {
  assert.deepEqual(directRoute('b1', 'telegram', { type: 'group', id: '-100' }), { botId: 'b1', adapter: 'telegram', sessionId: '-100', launcherType: 'group', launcherId: '-100', senderId: '', replyTo: '', stream: false });
  const sent: ReplyRoute[] = [];
  const bots: Record<string, { adapter: string; enabled: boolean }> = { on: { adapter: 'http-bot', enabled: true }, off: { adapter: 'http-bot', enabled: false }, broken: { adapter: 'slack', enabled: true } };
  const deps = {
    bot: async (id: string) => bots[id] ?? null,
    send: async (route: ReplyRoute) => (sent.push(route), route.adapter === 'slack' ? { delivered: false as const, reason: 'channel_not_found' } : { delivered: true as const }),
  };
  const request = (botId: string, chain = [{ type: 'Plain' as const, text: 'hi' }]) => ({ v: 1 as const, botId, target: { type: 'person' as const, id: 'u1' }, messageChain: chain, origin: 'operator:ann' });
  assert.deepEqual(await sendToChat(request('on'), deps), { v: 1, ok: true });
  assert.deepEqual(sent.map((r) => [r.botId, r.sessionId, r.senderId]), [['on', 'u1', 'u1']]);
  assert.deepEqual(await sendToChat(request('nope'), deps), { v: 1, ok: false, error: { code: 'not_found', message: 'no bot "nope"' } });
  assert.deepEqual(await sendToChat(request('off'), deps), { v: 1, ok: false, error: { code: 'disabled', message: 'bot off is disabled' } });
  assert.deepEqual(await sendToChat(request('on', []), deps), { v: 1, ok: false, error: { code: 'invalid', message: 'the message chain is empty' } });
  assert.deepEqual(await sendToChat(request('broken'), deps), { v: 1, ok: false, error: { code: 'failed', message: 'channel_not_found' } });
});
