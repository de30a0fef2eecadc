import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeTbox, type FakeTbox } from '../fakes/tbox-server.js';
import { tinyPng } from '../fakes/image-host.js';
import { answer, describeRunner } from './external-runner-e2e-support.js';
import { replyText } from './runner-support.js';

/** `tbox-app-api` through the whole system against a fake of its HTTP API (see describeRunner). */
describeRunner('tbox-app-api', {
  start: () => startFakeTbox({ apiKey: 'runner-secret', appId: 'app-1', answer }),
  pipeline: (f) => ({ 'base-url': f.url, 'api-key': 'runner-secret', 'app-id': 'app-1' }),
  conversationOf: (body) => body.conversationId,
  firstConversation: () => 'tbox-conv-1',
  queryOf: (body) => body.query,
  authError: /^tbox-app-api failed: Tbox answered HTTP 401: 401 invalid authorization/,
  moreTests(ctx) {
    test('a picture of the user\'s message is uploaded to Tbox first and the chat names it as an IMAGE file', async () => {
      const { sys } = ctx();
      const fake = ctx().fake as FakeTbox;
      const png = tinyPng();
      const res = await sys.post({ session_id: 'tbox-image-session', sender: { id: 'u1', name: 'Alice' }, message: [{ type: 'Plain', text: 'what is this' }, { type: 'Image', base64: `data:image/png;base64,${png.toString('base64')}` }] });
      assert.equal(res.status, 202);
      const { data } = (await res.json()) as { data: { accepted_message_id: string } };
      const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === data.accepted_message_id && c.json?.is_final === true), 30_000);
      assert.equal(replyText(all.find((c) => c.json?.reply_to === data.accepted_message_id && c.json?.is_final === true)!), answer);
      const upload = fake.uploads.at(-1)!;
      assert.deepEqual({ type: upload.type, bytes: upload.bytes }, { type: 'image/png', bytes: png.length });
      const chat = fake.requests.filter((r) => r.path === '/api/chat').at(-1)!;
      assert.equal(chat.body.query, 'what is this');
      assert.deepEqual(chat.body.files, [{ fileId: upload.fileId, type: 'IMAGE' }]);
    });
  },
});
