import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { echoResponder } from '../fakes/index.js';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, startAdmin } from '../admin/admin-support.js';

/** An open answer stream of the debug chat and what it has received so far. */
interface Listener {
  status: Promise<number>;
  text(): string;
  stop(): Promise<void>;
}

/**
 * The console's debug chat names a session by the browser's key, bound to the signed-in user: the
 * same key from another user, a viewer included, opens another (empty) session, and the session's id
 * (shown in the query log) opens nothing.
 */
describe('debug chat sessions are bound to their caller', () => {
  let sys: TestSystem;
  let admin: RunningService;
  const webChatToken = uniqueName('webchat-token-');
  const cookies = new Map<string, string>();

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken } });
    admin = await startAdmin(sys, { ADMIN_INGRESS_URL: sys.services.get('ingress').url, WEBCHAT_TOKEN: webChatToken });
    const root = new AdminClient(admin.url);
    await root.login();
    for (const [name, role] of [['ann', 'admin'], ['bob', 'admin'], ['vic', 'viewer']] as const) {
      const username = uniqueName(name);
      const password = `password of ${username}`;
      assert.equal((await root.call('POST', '/users', { username, password, role })).status, 201);
      // Signed in as a browser is: the session cookie names the user.
      const res = await fetch(`${admin.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) });
      assert.equal(res.status, 200, await res.clone().text());
      const cookie = res.headers.get('set-cookie')?.split(';')[0];
      assert.ok(cookie, 'the sign-in set a session cookie');
      cookies.set(name, cookie);
    }
  });

  after(async () => {
    await sys?.stop();
  });

  const chat = (tail: string) => `${admin.url}/api/v1/debug-chat/bots/${sys.botId}/session/${tail}`;
  const headers = (who: string, key?: string) => ({ cookie: cookies.get(who) ?? '', 'content-type': 'application/json', ...(key ? { 'x-chat-session-key': key } : {}) });

  function listen(who: string, key: string): Listener {
    const abort = new AbortController();
    let text = '';
    const status = fetch(chat('events'), { headers: headers(who, key), signal: abort.signal }).then(async (res) => {
      if (res.ok && res.body) {
        try {
          for await (const chunk of res.body) text += Buffer.from(chunk).toString('utf8');
        } catch {
          // Aborted by stop().
        }
      } else text += await res.text();
      return res.status;
    });
    return { status, text: () => text, stop: async () => { abort.abort(); await status.catch(() => 0); } };
  }

  test('another user with the same key, a viewer too, reads nothing of the chat; without a key the call is refused by name', async () => {
    sys.llm.setDefault(echoResponder);
    const key = randomBytes(32).toString('base64url');
    const said = uniqueName('only-for-ann-');
    const ann = listen('ann', key);
    const bob = listen('bob', key);
    const vic = listen('vic', key);
    try {
      await waitUntil('the three streams are open', () => [ann, bob, vic].every((l) => l.text().includes(': connected')), 30_000);
      const sent = await fetch(chat('messages'), { method: 'POST', headers: headers('ann', key), body: JSON.stringify({ text: said }) });
      assert.equal(sent.status, 202, await sent.clone().text());
      const { sessionId } = (await sent.json()) as { sessionId: string };
      await waitUntil('ann\'s stream gets the answer', () => ann.text().includes(`Echo: ${said}`), 30_000);

      // Bob's reset with the same key is another session's: ann's conversation stays.
      const reset = await fetch(chat('reset'), { method: 'POST', headers: headers('bob', key), body: '{}' });
      assert.equal(reset.status, 201);
      assert.deepEqual(await reset.json(), { removed: false });

      // The session id ann's query shows, used as a key by bob: yet another session.
      const guess = await fetch(chat('messages'), { method: 'POST', headers: headers('bob', sessionId.padEnd(40, '0')), body: JSON.stringify({ text: 'hello?' }) });
      assert.equal(guess.status, 202);
      assert.notEqual(((await guess.json()) as { sessionId: string }).sessionId, sessionId);

      // Ann's next turn still remembers the first: her conversation was not reset.
      const again = uniqueName('again-');
      assert.equal((await fetch(chat('messages'), { method: 'POST', headers: headers('ann', key), body: JSON.stringify({ text: again }) })).status, 202);
      const request = await waitUntil('the model request of ann\'s second turn', () => sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes(again)), 30_000);
      assert.ok(JSON.stringify(request.body.messages).includes(said), 'ann\'s conversation kept its history');
      await waitUntil('ann\'s stream gets the second answer', () => ann.text().includes(`Echo: ${again}`), 30_000);
    } finally {
      await Promise.all([ann.stop(), bob.stop(), vic.stop()]);
    }
    for (const [who, l] of [['bob', bob], ['vic', vic]] as const) {
      assert.equal(await l.status, 200, who);
      assert.ok(!l.text().includes(said), `${who}'s stream saw ann's chat: ${l.text()}`);
    }

    for (const [method, tail] of [['GET', 'events'], ['POST', 'messages'], ['POST', 'reset']] as const) {
      const res = await fetch(chat(tail), { method, headers: headers('ann'), ...(method === 'POST' ? { body: JSON.stringify({ text: 'hi' }) } : {}) });
      assert.equal(res.status, 400, `${method} ${tail} without a key`);
      const body = (await res.json()) as { code: string; field: string };
      assert.deepEqual([body.code, body.field], ['validation_failed', 'header.x-chat-session-key'], `${method} ${tail}`);
    }
  });
});
