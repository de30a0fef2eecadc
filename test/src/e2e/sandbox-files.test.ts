import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeResponder } from '../fakes/openai-server.js';
import { startFakeImageHost, startFakeOneBot, tinyPng, type FakeImageHost, type FakeOneBot } from '../fakes/index.js';
import { addOneBotBot, startTestSystem, type TestSystem } from '../harness/system.js';
import { finalReply, send } from './pipeline-support.js';

const ACCESS_TOKEN = 'onebot-sandbox-files-token';
const RUN_AS = String(58_000 + Math.floor(Math.random() * 1_000));
const b64 = (text: string) => Buffer.from(text).toString('base64');

/**
 * The model's side of the round trip: it reads where the user's files were put (the note on the
 * user's turn) and where its outbox is (the sandbox guidance), then runs one command that writes its
 * answer files there.
 */
function convertsInbox(command: (inbox: string, outbox: string) => string): FakeResponder {
  return (body) => {
    const all = JSON.stringify(body.messages);
    const outbox = /\/workspace\/outbox\/([0-9a-f-]{36})\//.exec(all);
    assert.ok(outbox, 'the guidance names the outbox');
    const inbox = `/workspace/inbox/${outbox[1]}`;
    assert.ok(all.includes(inbox), 'the user turn names the inbox');
    return { toolCalls: [{ name: 'exec', arguments: JSON.stringify({ command: command(inbox, `/workspace/outbox/${outbox[1]}`) }) }] };
  };
}

/** Files from the chat into the sandbox and the agent's files back to the chat, on two platforms. */
describe('files between the chat and the sandbox', () => {
  let sys: TestSystem;
  let onebot: FakeOneBot;
  let images: FakeImageHost;

  before(async () => {
    sys = await startTestSystem({
      pipelineConfig: { ai: { 'local-agent': { 'box-enabled': true } } },
      serviceEnv: { ATTACHMENT_ALLOW_PRIVATE_NETWORK: 'true' },
    });
    [onebot, images] = await Promise.all([startFakeOneBot({ accessToken: ACCESS_TOKEN }), startFakeImageHost()]);
    await addOneBotBot(sys, 'QQ bot', { host: onebot.host, port: onebot.port, 'access-token': ACCESS_TOKEN });
    await Promise.all([
      sys.services.start('sandbox', { SANDBOX_RUN_AS_UID: RUN_AS, SANDBOX_RUN_AS_GID: RUN_AS }),
      sys.services.start('gateway', { GATEWAY_LEASE_TTL_MS: '3000' }),
    ]);
    await onebot.waitForConnections((c) => c.open === 1, 60_000);
  });
  after(async () => {
    await sys?.stop();
    await Promise.all([onebot?.close(), images?.close()]);
  });

  test('HTTP-bot: a file and an image go into the workspace; the files the agent writes come back with the answer', async () => {
    const png = tinyPng().toString('base64');
    sys.llm.script(
      convertsInbox((inbox, outbox) => `ls ${inbox} && tr a-z A-Z < ${inbox}/data.csv > ${outbox}/upper.csv && cp ${inbox}/image-2.png ${outbox}/back.png`),
      { text: 'Here you go.' },
    );
    const id = await send(sys, {
      session_id: 'files-1',
      message: [
        { type: 'Plain', text: 'upper-case my csv and send the picture back' },
        { type: 'File', name: 'data.csv', base64: b64('a,b\n1,2\n') },
        { type: 'Image', base64: `data:image/png;base64,${png}` },
      ],
    });
    const final = await finalReply(sys, id, 90_000);
    const tool = sys.llm.requests.at(-1)!.body.messages!.find((m) => m.role === 'tool');
    assert.match(JSON.stringify(tool?.content), /data.csv\\nimage-2.png/, 'both files were in the inbox');
    const chain = sys.callbacks.received.filter((c) => c.json?.reply_to === id).flatMap((c) => c.json.message as { type: string; name?: string; base64?: string; text?: string }[]);
    assert.ok(chain.some((c) => c.type === 'Plain' && c.text?.includes('Here you go.')));
    const file = chain.find((c) => c.type === 'File');
    assert.equal(file?.name, 'upper.csv');
    assert.equal(Buffer.from(file!.base64!, 'base64').toString(), 'A,B\n1,2\n');
    const image = chain.find((c) => c.type === 'Image');
    assert.equal(image?.base64, `data:image/png;base64,${png}`);
    assert.equal(final.json.is_final, true);
    // The outbox was emptied: the next answer carries nothing of this one.
    assert.equal(sys.callbacks.received.filter((c) => c.json?.reply_to === id && (c.json.message as { type: string }[]).some((m) => m.type === 'File')).length, 1);
  });

  test('OneBot: an image the platform links to is read into the workspace, and an image and a file go back as OneBot segments', async () => {
    sys.llm.script(
      convertsInbox((inbox, outbox) => `cp ${inbox}/image-1.png ${outbox}/again.png && wc -c < ${inbox}/image-1.png > ${outbox}/size.txt`),
      { text: 'Done.' },
    );
    onebot.emitMessage({ messageType: 'private', userId: 515151, message: [{ type: 'text', data: { text: 'copy this picture' } }, { type: 'image', data: { file: 'red.png', url: `${images.url}/red.png` } }] });
    await onebot.waitFor((a) => a.some((x) => x.action === 'send_msg' && x.params.user_id === 515151), 90_000);
    const segments = onebot.sent().filter((x) => x.params.user_id === 515151).flatMap((x) => x.params.message as { type: string; data: Record<string, string> }[]);
    assert.ok(images.requests.includes('/red.png'), 'the runner read the linked image');
    const image = segments.find((s) => s.type === 'image');
    assert.equal(image?.data.file, `base64://${tinyPng().toString('base64')}`);
    const file = segments.find((s) => s.type === 'file');
    assert.equal(file?.data.name, 'size.txt');
    assert.equal(Buffer.from(file!.data.file!.replace('base64://', ''), 'base64').toString().trim(), String(tinyPng().length));
    assert.ok(segments.some((s) => s.type === 'text' && s.data.text?.includes('Done.')));
  });
});
