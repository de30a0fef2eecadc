import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { AdminClient, ConfigEvents, startAdmin } from './admin-support.js';

/**
 * Instance settings through the admin API: the command prefix and the ban words change for the very
 * next message, across the orchestrator and the dispatcher, without a restart.
 */
describe('admin API: instance settings', () => {
  let sys: TestSystem;
  let api: AdminClient;
  let events: ConfigEvents;

  before(async () => {
    sys = await startTestSystem();
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
    api = new AdminClient((await startAdmin(sys)).url);
    await api.login();
    events = await ConfigEvents.open(sys);
  });
  after(async () => {
    await events?.close();
    await sys?.stop();
  });

  test('nothing stored: every value is null (the services use their env and file defaults)', async () => {
    const got = await api.call('GET', '/settings');
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.deepEqual({ command: got.body.command, banWords: got.body.banWords }, { command: { enable: null, prefix: null, admins: null }, banWords: null });
    assert.equal(got.body.version, 1);
    const doc = (await (await fetch(`${api.baseUrl}/api/docs-json`)).json()) as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    assert.ok(doc.paths['/api/v1/settings']?.put?.requestBody, 'the OpenAPI document has the settings routes');
  });

  test('a new command prefix makes the next #help a command; the old prefix is plain text again', async () => {
    // Warm the caches with the defaults first: `#help` is plain text for the model.
    const plain = await finalReply(sys, await send(sys, text('set-1', '#help')));
    assert.deepEqual(plain.json.message.at(-1), { type: 'Plain', text: 'echo: #help' });

    const current = await api.call('GET', '/settings');
    const put = await api.call('PUT', '/settings', { command: { enable: true, prefix: ['#'] } }, { 'if-match': String(current.body.version) });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.command, { enable: true, prefix: ['#'], admins: null });
    assert.equal(put.body.version, current.body.version + 1);
    await events.waitFor('settings', 'instance', put.body.version);

    const help = await finalReply(sys, await send(sys, text('set-1', '#help')));
    assert.match(String(help.json.message.at(-1).text), /^\[bot\] 可用命令:/);
    const old = await finalReply(sys, await send(sys, text('set-1', '!help')));
    assert.deepEqual(old.json.message.at(-1), { type: 'Plain', text: 'echo: !help' });
  });

  test('a ban word added through the API masks the next reply that contains it', async () => {
    sys.llm.setDefault({ text: 'this is verbotenstuff indeed' });
    const before = await finalReply(sys, await send(sys, text('set-2', 'say it')));
    assert.deepEqual(before.json.message, [{ type: 'Plain', text: 'this is verbotenstuff indeed' }]);

    const current = await api.call('GET', '/settings');
    const put = await api.call('PUT', '/settings', { version: current.body.version, command: current.body.command, banWords: { words: ['verboten\\w*'], mask: '*' } });
    assert.equal(put.status, 200, JSON.stringify(put.body));

    const after = await finalReply(sys, await send(sys, text('set-2', 'say it again')));
    assert.deepEqual(after.json.message, [{ type: 'Plain', text: `this is ${'*'.repeat('verbotenstuff'.length)} indeed` }]);
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
  });

  test('writes are versioned, validated, audited, and refused to viewers', async () => {
    const current = await api.call('GET', '/settings');
    const stale = await api.call('PUT', '/settings', { version: current.body.version - 1 });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'version_conflict');
    assert.equal((await api.call('PUT', '/settings', {})).status, 428);
    const bad = await api.call('PUT', '/settings', { version: current.body.version, banWords: { words: ['(unclosed'] } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.field, 'body.banWords.words[0]');

    const audit = await api.call('GET', '/audit?resource=settings');
    assert.equal(audit.status, 200);
    assert.deepEqual(audit.body.items.map((e: { action: string; changes: string[] }) => `${e.action}:${e.changes.join(',')}`), ['update:banWords', 'update:command.enable,command.prefix']);

    assert.equal((await api.call('POST', '/users', { username: 'settings-viewer', password: 'a viewer password', role: 'viewer' })).status, 201);
    const viewer = new AdminClient(api.baseUrl);
    await viewer.login('settings-viewer', 'a viewer password');
    assert.equal((await viewer.call('GET', '/settings')).status, 200);
    assert.equal((await viewer.call('PUT', '/settings', { version: current.body.version })).status, 403);
  });
});
