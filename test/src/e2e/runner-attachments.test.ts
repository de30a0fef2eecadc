import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { startFakeImageHost, tinyPng, type FakeImageHost, type RecordedRequest } from '../fakes/index.js';
import { waitUntil } from '../harness/wait.js';
import { uniqueName } from '../harness/ids.js';
import { sample } from '../harness/metrics.js';

/** Sends a chain on a new session, waits for its final callback; returns the final reply's message and the model request. */
async function ask(sys: TestSystem, marker: string, chain: unknown[]): Promise<{ reply: unknown; request: RecordedRequest }> {
  const res = await sys.post({ session_id: uniqueName('att'), message: [{ type: 'Plain', text: marker }, ...chain] });
  assert.equal(res.status, 202);
  const replyTo = ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
  const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === replyTo && c.json?.is_final === true), 30_000);
  const reply = all.find((c) => c.json?.reply_to === replyTo && c.json?.is_final === true)!.json.message;
  const request = sys.llm.requests.find((r) => JSON.stringify(r.body.messages).includes(marker));
  assert.ok(request, 'the model was called with the message');
  return { reply, request };
}

function userContent(request: RecordedRequest): unknown {
  return [...(request.body.messages ?? [])].reverse().find((m) => m.role === 'user')?.content;
}

describe('attachments with a vision model', () => {
  let sys: TestSystem;
  let host: FakeImageHost;

  before(async () => {
    host = await startFakeImageHost();
    sys = await startTestSystem({
      modelAbilities: ['func_call', 'vision'],
      serviceEnv: {
        // The fake image host listens on loopback, which a deployment refuses by default.
        ATTACHMENT_ALLOW_PRIVATE_NETWORK: 'true',
        ATTACHMENT_MAX_BYTES: String(1_048_576),
        ATTACHMENT_FETCH_TIMEOUT_MS: '1500',
      },
    });
  });

  after(async () => {
    await sys?.stop();
    await host?.close();
  });

  test('an image URL reaches the model as an image_url part holding the image as base64', async () => {
    const { reply, request } = await ask(sys, 'what is in the picture', [{ type: 'Image', url: `${host.url}/red.png` }]);
    assert.deepEqual(userContent(request), [
      { type: 'text', text: 'what is in the picture' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${tinyPng().toString('base64')}` } },
    ]);
    assert.deepEqual(reply, [{ type: 'Plain', text: 'Echo: what is in the picture' }]);
    assert.ok(host.requests.includes('/red.png'));
  });

  test('an inline base64 image goes to the model as a data URL without any fetch', async () => {
    const before = host.requests.length;
    const b64 = tinyPng().toString('base64');
    const { request } = await ask(sys, 'inline picture', [{ type: 'Image', base64: `data:image/png;base64,${b64}` }]);
    assert.deepEqual(userContent(request), [
      { type: 'text', text: 'inline picture' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } },
    ]);
    assert.equal(host.requests.length, before);
  });

  test('voice and file parts are named by type and name, never sent as bytes or URLs', async () => {
    const { reply, request } = await ask(sys, 'listen and read', [
      { type: 'Voice', url: `${host.url}/voice.silk?token=secret-token`, length: 3 },
      { type: 'File', id: 'f1', name: 'report.pdf', size: 1234, base64: 'JVBERi0xLjQK' },
    ]);
    assert.deepEqual(userContent(request), [
      { type: 'text', text: 'listen and read' },
      { type: 'text', text: '[File](voice)' },
      { type: 'text', text: '[File](report.pdf)' },
    ]);
    assert.doesNotMatch(JSON.stringify(request.body), /secret-token|JVBERi0xLjQK/);
    assert.deepEqual(reply, [{ type: 'Plain', text: 'Echo: listen and read[File](voice)[File](report.pdf)' }]);
  });

  test('images that cannot be read (404, oversized, not an image, too slow) are left out; the message still gets its answer', async () => {
    const { reply, request } = await ask(sys, 'broken pictures', [
      { type: 'Image', url: `${host.url}/missing.png` },
      { type: 'Image', url: `${host.url}/huge.png` },
      { type: 'Image', url: `${host.url}/page.html` },
      { type: 'Image', url: `${host.url}/slow.png` },
    ]);
    assert.deepEqual(userContent(request), [{ type: 'text', text: 'broken pictures' }]);
    assert.deepEqual(reply, [{ type: 'Plain', text: 'Echo: broken pictures' }]);
    assert.ok(host.hugeBytesWritten() < 16 * 1_048_576, `the runner stopped reading the oversized image (${host.hugeBytesWritten()} bytes written)`);

    const metrics = await waitUntil('unreadable images counted', async () => {
      const text = await (await fetch(`${sys.services.get('runner').url}/metrics`)).text();
      return (sample(text, 'conveyor_attachment_unreadable_total') ?? 0) >= 4 ? text : undefined;
    }, 15_000, 250);
    for (const reason of ['http_status', 'too_large', 'wrong_type', 'timeout']) {
      assert.equal(sample(metrics, 'conveyor_attachment_unreadable_total', { reason }), 1, reason);
    }
    const lines = sys.services.get('runner').logs
      .filter((l) => l.includes('image could not be read'))
      .map((l) => JSON.parse(l) as { trace_id?: string; reason?: string; url?: string });
    assert.deepEqual(lines.map((l) => l.reason).sort(), ['http_status', 'timeout', 'too_large', 'wrong_type']);
    for (const line of lines) assert.match(String(line.trace_id), /^[0-9a-f]{32}$/, 'the log line carries the trace id');
  });
});

describe('attachments with a text-only model', () => {
  let sys: TestSystem;
  let host: FakeImageHost;

  before(async () => {
    host = await startFakeImageHost();
    sys = await startTestSystem({ serviceEnv: { ATTACHMENT_ALLOW_PRIVATE_NETWORK: 'true' } });
  });

  after(async () => {
    await sys?.stop();
    await host?.close();
  });

  test('gets the text only, and the image is never fetched', async () => {
    const { reply, request } = await ask(sys, 'no eyes here', [{ type: 'Image', url: `${host.url}/red.png` }, { type: 'Image', base64: tinyPng().toString('base64') }]);
    assert.equal(userContent(request), 'no eyes here');
    assert.deepEqual(reply, [{ type: 'Plain', text: 'Echo: no eyes here' }]);
    assert.deepEqual(host.requests, []);
  });
});
