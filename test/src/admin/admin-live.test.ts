import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AdminApi } from '@conveyor/contracts';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { uniqueName } from '../harness/ids.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { AdminClient, ADMIN_PASSWORD, SseStream, signedInViewer } from './admin-support.js';

/**
 * Live conversations through two admin replicas: each hears the bus itself, so a viewer on either sees
 * a chat's message and its streamed reply as they happen; text is shown only when the setting says so.
 */
describe('admin API: live conversations', () => {
  let sys: TestSystem;
  let first: AdminClient;
  let second: AdminClient;
  let viewer: AdminClient;
  const streams: SseStream[] = [];
  const open = async (client: AdminClient, path: string) => {
    const s = await SseStream.open(client, path);
    streams.push(s);
    return s;
  };

  before(async () => {
    sys = await startTestSystem();
    const env = { CONVEYOR_ADMIN_PASSWORD: ADMIN_PASSWORD, CONVEYOR_SECRET_KEY: randomBytes(32).toString('base64') };
    const [a, b] = await Promise.all([sys.services.start('admin', env, 'admin-1'), sys.services.start('admin', env, 'admin-2')]);
    first = new AdminClient(a.url);
    await first.login();
    second = new AdminClient(b.url);
    await second.login();
    viewer = await signedInViewer(first, b.url, uniqueName('reader'));
  });
  after(async () => {
    for (const s of streams) s.close();
    await sys?.stop();
  });

  test('a message and its streamed reply reach viewers on both replicas as they happen; text hidden by default', async () => {
    const listOnFirst = await open(first, '/live/sessions');
    const listOnSecond = await open(viewer, '/live/sessions');
    for (const s of [listOnFirst, listOnSecond]) {
      const snapshot = await s.waitFor('the snapshot', (events) => events.find((e) => e.type === 'snapshot'));
      assert.equal(AdminApi.LiveSessionsSnapshot.parse(snapshot.data).textShown, false);
    }
    const chat = uniqueName('live');
    const transcript = await open(second, `/live/transcript?botId=${sys.botId}&launcherType=person&launcherId=${chat}`);
    await transcript.waitFor('the transcript snapshot', (events) => events.find((e) => e.type === 'snapshot'));
    // LangBot's streaming emits every 8 deltas: 17 deltas of 2 characters make two partial lines and the final.
    sys.llm.script({ text: 'Your order ships tomorrow morning.', chunkSize: 2, tickMs: 20 });
    await finalReply(sys, await send(sys, text(chat, 'when does my order ship?')));
    for (const s of [listOnFirst, listOnSecond]) {
      const replying = await s.waitFor('the chat listed while replying', (events) => events.filter((e) => e.type === 'session').map((e) => AdminApi.LiveSession.parse(e.data)).find((x) => x.launcherId === chat && x.replying));
      assert.deepEqual([replying.botId, replying.adapter, replying.lastMessage, replying.lastMessageChars], [sys.botId, 'http-bot', null, 24]);
      await s.waitFor('the reply ended', (events) => events.filter((e) => e.type === 'session').map((e) => AdminApi.LiveSession.parse(e.data)).find((x) => x.launcherId === chat && !x.replying));
    }
    const entries = await transcript.waitFor('the reply line final', (events) => {
      const lines = events.filter((e) => e.type === 'entry').map((e) => AdminApi.LiveEntry.parse(e.data));
      return lines.some((l) => l.role === 'bot' && l.final) ? lines : undefined;
    });
    const bot = entries.filter((l) => l.role === 'bot');
    assert.ok(bot.length > 1, `the reply line was sent again as it grew (${bot.length} times)`);
    assert.ok(bot.every((l, i) => i === 0 || l.chars >= bot[i - 1]!.chars), 'each version at least as long as the one before');
    assert.deepEqual(entries.filter((l) => l.role === 'user').map((l) => [l.text, l.chars]), [[null, 24]]);
    assert.ok(bot.every((l) => l.text === null));
  });

  test('with showMessageText on, the text is shown; a transcript opened later starts from the chat\'s last lines', async () => {
    const current = await first.call('GET', '/settings');
    const put = await first.call('PUT', '/settings', { version: current.body.version, monitoring: { ...current.body.monitoring, showMessageText: true } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const chat = uniqueName('live');
    const listening = await open(second, '/live/sessions');
    await listening.waitFor('the snapshot', (events) => events.find((e) => e.type === 'snapshot'));
    sys.llm.script({ text: 'Hello there.' });
    await finalReply(sys, await send(sys, text(chat, 'hi')));
    await listening.waitFor('the chat', (events) => events.filter((e) => e.type === 'session').map((e) => AdminApi.LiveSession.parse(e.data)).find((x) => x.launcherId === chat && x.lastMessage === 'hi' && !x.replying));
    const later = await open(first, `/live/transcript?botId=${sys.botId}&launcherType=person&launcherId=${chat}`);
    const snapshot = AdminApi.LiveTranscriptSnapshot.parse((await later.waitFor('the snapshot', (events) => events.find((e) => e.type === 'snapshot'))).data);
    assert.deepEqual(snapshot.entries.map((l) => [l.role, l.text, l.final]), [['user', 'hi', true], ['bot', 'Hello there.', true]]);
  });

  test('a transcript for a malformed chat is a 400; without signing in, 401', async () => {
    assert.equal((await first.call('GET', '/live/transcript?botId=x')).status, 400);
    const anonymous = await fetch(`${first.baseUrl}/api/v1/live/sessions`);
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
  });
});
