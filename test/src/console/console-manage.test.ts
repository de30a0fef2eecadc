// The console's pages for what the deployment holds, in Chromium as an operator uses them: a knowledge
// base made, a document uploaded and followed to ready (ingested by the runner from the fake OpenAI
// server's embeddings), re-indexed, refused, deleted; the plugins their heartbeats register; a bot's
// webhook URL and a gateway-held bot's lease; a Telegram bot made and edited through its settings form;
// a bot's requests for a person set in its form and a waiting chat shown and dismissed;
// Agent Skills installed from a zip and saved from a sandbox workspace, workspaces deleted, and a
// pipeline's sandbox keys and skill binding set in its form.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { Redis } from 'ioredis';
import { AdminApi, DEFAULT_HUMAN_REQUEST_REPLY, redisKeys } from '@conveyor/contracts';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { createPrismaClient, type PrismaClient } from '@conveyor/persistence';
import { packDirectory } from '@conveyor/sandbox/skills';
import { NATS_URL, REDIS_URL, addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { launchChromium, pinLocale, signIn } from './chromium.js';
import { skillMd, zipOf } from '../admin/skill-zip.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';

/** Generous: several services share two loaded cores with the browser. */
const UI_TIMEOUT = 45_000;
const HANDBOOK = ['The office opens at nine.', 'Visitors park on level two.', 'Lunch is served from noon.'].join('\n\n');

describe('console: knowledge bases, plugins, bot endpoints and adapter forms in Chromium', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let browser: Browser;
  let page: Page;
  let api: AdminClient;
  let prisma: PrismaClient;
  let redis: Redis;
  let plugin: RunningPlugin | undefined;
  const kbId = uniqueName('console-kb-');
  const kbName = uniqueName('Console handbook ');

  const field = (id: string) => page.locator(`[id="${id}"]`);
  const go = (hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  /** Waits for a success note; an error note shown instead fails at once with its text. */
  const expectOk = async (text: string) => {
    const ok = page.locator('.note.ok', { hasText: text });
    const alert = page.locator('[role=alert]').first();
    const shown = await Promise.race([ok.waitFor().then(() => undefined), alert.waitFor().then(() => alert.textContent())]);
    if (shown !== undefined) assert.fail(`expected "${text}", the page says: ${shown}`);
  };
  const documentRow = (name: string) => page.locator(`tr[data-name="${name}"]`);

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { KNOWLEDGE_SWEEP_MS: '60000' } });
    admin = await startAdmin(sys, { INGRESS_PUBLIC_URL: 'https://bots.example.test' });
    api = new AdminClient(admin.url);
    await api.login();
    prisma = createPrismaClient(sys.db.url);
    redis = new Redis(REDIS_URL);
    await prisma.llmModel.create({ data: { id: 'embed', name: 'Embedder', baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: 'fake-embed', abilities: ['embedding'] } });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    await pinLocale(page, 'en');
    page.setDefaultTimeout(UI_TIMEOUT);
    page.on('dialog', (d) => void d.accept());
    await signIn(page, admin.url, ADMIN_PASSWORD);
  });

  after(async () => {
    await plugin?.stop();
    await browser?.close();
    redis?.disconnect();
    await prisma?.$disconnect();
    await sys?.stop();
  });

  test('a knowledge base made in the console; an uploaded document goes to ready, is re-indexed, and deleted', async () => {
    await page.click('nav.sidebar a:has-text("Knowledge bases")');
    await page.click('a.button:has-text("New knowledge base")');
    await page.fill('#kb-id', kbId);
    await page.fill('#kb-name', kbName);
    await page.locator('#kb-embedding-model option[value="embed"]').waitFor({ state: 'attached' });
    await page.fill('#kb-chunk-size', '40');
    await page.fill('#kb-chunk-overlap', '0');
    await page.click('form[aria-label="knowledge base"] button[type=submit]');
    await page.locator('h1', { hasText: `Knowledge base ${kbName}` }).waitFor();

    await page.setInputFiles('#kb-file', { name: 'handbook.md', mimeType: 'text/markdown', buffer: Buffer.from(HANDBOOK) });
    await page.click('button:has-text("Upload")');
    await expectOk('handbook.md stored; a runner ingests it.');
    // The page follows the document while it waits and is indexed, without a reload.
    await documentRow('handbook.md').locator('td.status', { hasText: 'Ready' }).waitFor();
    assert.equal(await documentRow('handbook.md').locator('td').nth(4).textContent(), '3', 'three chunks');
    await page.locator('p', { hasText: '1 ready, 0 indexing, 0 pending, 0 failed' }).waitFor();

    const before = sys.llm.embeddingRequests.length;
    await documentRow('handbook.md').locator('button:has-text("Re-index")').click();
    await expectOk('handbook.md queued for indexing again.');
    await waitUntil('the document embedded again', () => sys.llm.embeddingRequests.length > before || undefined, UI_TIMEOUT);
    // The row may still show the first indexing's Ready: wait for the second to be stored, then for the page.
    const doc = await waitUntil('the document indexed again', async () => {
      const d = await prisma.knowledgeDocument.findFirstOrThrow({ where: { knowledgeBaseId: kbId, name: 'handbook.md' } });
      return d.revision === 2 && d.status === 'done' ? d : undefined;
    }, UI_TIMEOUT);
    await documentRow('handbook.md').locator('td.status', { hasText: 'Ready' }).waitFor();
    assert.deepEqual([doc.revision, doc.status], [2, 'done']);

    await page.setInputFiles('#kb-file', { name: 'tool.exe', mimeType: 'application/octet-stream', buffer: Buffer.from('MZ') });
    await page.click('button:has-text("Upload")');
    await page.locator('[role=alert]', { hasText: 'unsupported document type' }).waitFor();

    await documentRow('handbook.md').locator('button:has-text("Delete")').click();
    await page.locator('td.empty', { hasText: 'No documents yet.' }).waitFor();
    assert.equal(await prisma.knowledgeChunk.count({ where: { knowledgeBaseId: kbId } }), 0);
  });

  test('the knowledge base\'s name, description and retrieval settings are edited on its page', async () => {
    await prisma.llmModel.create({ data: { id: 'rerank', name: 'Reranker', baseUrl: sys.llm.url, apiKeyRef: 'env:CONVEYOR_KEY_E2E_LLM', modelId: 'fake-rerank', abilities: ['rerank'] } });
    // The settings form lists the rerank models it found when the page opened.
    await page.reload();
    const form = page.locator('form[aria-label="knowledge base settings"]');
    await form.locator('#kb-edit-rerank-model option[value="rerank"]').waitFor({ state: 'attached' });
    assert.equal(await form.locator('#kb-edit-name').inputValue(), kbName);
    await form.locator('#kb-edit-name').fill(`${kbName} v2`);
    await form.locator('#kb-edit-description').fill('Where things are in the office');
    await form.locator('#kb-edit-top-k').fill('4');
    await form.locator('#kb-edit-rerank-model').selectOption('rerank');
    await form.locator('#kb-edit-retrieval-mode').selectOption('fulltext');
    await form.locator('#kb-edit-chunk-size').fill('30');
    await form.locator('button[type=submit]').click();
    await expectOk('Settings saved.');
    await page.locator('h1', { hasText: `Knowledge base ${kbName} v2` }).waitFor();
    await page.locator('p.meta', { hasText: '4 chunks per question' }).waitFor();
    await page.locator('p.meta', { hasText: 'chunk size 30' }).waitFor();
    const stored = await prisma.knowledgeBase.findUniqueOrThrow({ where: { id: kbId } });
    assert.deepEqual([stored.name, stored.description, stored.topK, stored.rerankModelId, stored.chunkSize, stored.retrievalMode], [`${kbName} v2`, 'Where things are in the office', 4, 'rerank', 30, 'fulltext']);
    // Out of bounds: the API's reason, nothing stored.
    await form.locator('#kb-edit-top-k').fill('0');
    await form.locator('button[type=submit]').click();
    await form.locator('[role=alert]', { hasText: 'topK' }).waitFor();
    assert.equal((await prisma.knowledgeBase.findUniqueOrThrow({ where: { id: kbId } })).topK, 4);
  });

  test('a failed document shows why', async () => {
    sys.llm.failEmbeddings({ status: 500, message: 'embedding backend down' });
    try {
      await page.setInputFiles('#kb-file', { name: 'broken.txt', mimeType: 'text/plain', buffer: Buffer.from('A note that cannot be embedded.') });
      await page.click('button:has-text("Upload")');
      await documentRow('broken.txt').locator('td.status', { hasText: 'Failed' }).waitFor();
      assert.match((await documentRow('broken.txt').locator('td.kb-error').textContent()) ?? '', /embedding backend down \(after 3 tries\)/);
    } finally {
      sys.llm.failEmbeddings(undefined);
    }
    // The whole knowledge base goes, after the browser's confirmation.
    await page.click('section > .buttons button.danger:has-text("Delete")');
    await page.locator('h1', { hasText: 'Knowledge bases' }).waitFor();
    await waitUntil('the knowledge base gone', async () => (await prisma.knowledgeBase.count({ where: { id: kbId } })) === 0 || undefined, UI_TIMEOUT);
    assert.equal(await page.locator(`tr[data-id="${kbId}"]`).count(), 0);
  });

  test('the plugins page lists a plugin sending heartbeats with its version, events, tools and bound pipelines', async () => {
    const name = `tests/${uniqueName('console-plugin')}`;
    plugin = await runPlugin({
      name, version: '2.0.1', prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
      handlers: { GroupNormalMessageReceived: () => undefined },
      tools: [{ name: 'order_status', description: 'An order', parameters: { type: 'object' }, handler: () => 'shipped' }],
    });
    // The admin hears the heartbeats first; then the page, opened as an operator would, lists it.
    await waitUntil('the plugin registered', async () => AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.some((p) => p.name === name) || undefined, UI_TIMEOUT);
    await page.click('nav.sidebar a:has-text("Plugins")');
    const row = page.locator(`tr[data-name="${name}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual([cells[1], cells[2], cells[3], cells[6], cells[7], cells[8]], ['2.0.1', 'GroupNormalMessageReceived', 'order_status', 'default', '0 calls, 0 failed, mean —', ''], 'no calls yet, no settings to edit');
  });

  test('a plugin\'s settings form is built from its schema; saved values reach the plugin, the secret comes back masked', async () => {
    const name = `tests/${uniqueName('console-settings')}`;
    const changed: Array<string | null> = [];
    const withSettings = await runPlugin({
      name, prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500,
      settings: { type: 'object', properties: { greeting: { type: 'string', title: 'Greeting' }, mode: { type: 'string', enum: ['short', 'long'] }, token: { type: 'string', format: 'password' } }, required: ['greeting'] },
      onSettingsChanged: (pipelineId) => void changed.push(pipelineId),
      tools: [{ name: 'hello', description: 'Hello', parameters: { type: 'object' }, handler: () => 'hi' }],
    });
    try {
      await waitUntil('the plugin registered', async () => AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.some((p) => p.name === name && p.hasSettings) || undefined, UI_TIMEOUT);
      await go('#/plugins');
      // The list was loaded before this plugin beat: load it again.
      await page.reload();
      await page.locator(`tr[data-name="${name}"] a:has-text("Edit")`).click();
      const form = page.locator('form[aria-label="plugin settings"]');
      await form.locator('#plugin-setting-greeting').fill('Welcome');
      await form.locator('#plugin-setting-mode').selectOption('long');
      await form.locator('#plugin-setting-token').fill('tok-0123456789abcdef');
      assert.equal(await form.locator('#plugin-setting-token').getAttribute('type'), 'password');
      await form.locator('button[type=submit]').click();
      await expectOk('Settings saved; the plugin was told.');
      await waitUntil('the plugin told', () => changed.includes(null) || undefined, UI_TIMEOUT);
      assert.deepEqual(await withSettings.settings(), { greeting: 'Welcome', mode: 'long', token: 'tok-0123456789abcdef' });
      // Reloaded, the form shows the secret masked; saving again keeps it.
      await page.reload();
      await form.locator('#plugin-setting-greeting').waitFor();
      assert.equal(await form.locator('#plugin-setting-token').inputValue(), `${AdminApi.SECRET_MASK_PREFIX}cdef`);
      await form.locator('#plugin-setting-greeting').fill('Welcome back');
      await form.locator('button[type=submit]').click();
      await expectOk('Settings saved; the plugin was told.');
      await waitUntil('the second change', () => changed.length >= 2 || undefined, UI_TIMEOUT);
      assert.deepEqual(await withSettings.settings(), { greeting: 'Welcome back', mode: 'long', token: 'tok-0123456789abcdef' });
    } finally {
      await withSettings.stop();
    }
  });

  test("a webhook bot's URL to paste, and a gateway-held bot's holder", async () => {
    await go(`#/bots/${sys.botId}`);
    await field('bot-webhook-url').waitFor();
    assert.equal(await field('bot-webhook-url').inputValue(), `https://bots.example.test/bots/${sys.botId}`);

    const discord = await addBot(sys, 'Held bot', 'discord', { client_id: '42', token: 'discord-bot-token' });
    await go(`#/bots/${discord}`);
    await page.locator('.connection[data-state="not_held"]', { hasText: 'No gateway replica holds this connection now.' }).waitFor();
    assert.equal(await page.locator('#bot-webhook-url').count(), 0, 'no webhook for a bot on a held connection');
    const keys = redisKeys(sys.prefix);
    await redis.set(keys.connectionLease(discord), 'gateway-pod-2|9', 'PX', 60_000);
    try {
      await page.click('.connection button:has-text("Refresh")');
      await page.locator('.connection[data-state="held"] .holder', { hasText: 'gateway-pod-2' }).waitFor();
    } finally {
      await redis.del(keys.connectionLease(discord));
    }
  });

  test('a Telegram bot made and edited through its settings form; its secrets come back masked and are kept', async () => {
    const name = uniqueName('Form bot ');
    await go('#/bots/new');
    await page.fill('#bot-name', name);
    await page.selectOption('#bot-adapter', 'telegram');
    await field('cfg-token').fill('123456:telegram-secret-token');
    await field('cfg-webhook_secret').fill('hook-secret-value');
    await field('cfg-bot_username').fill('form_bot');
    await field('cfg-enable-stream-reply').check();
    await page.click('form[aria-label="bot"] button[type=submit]');
    await page.locator('h1', { hasText: `Bot ${name}` }).waitFor();
    const row = await prisma.bot.findFirstOrThrow({ where: { name } });
    assert.deepEqual(row.adapterConfig, { token: '123456:telegram-secret-token', webhook_secret: 'hook-secret-value', bot_username: 'form_bot', 'enable-stream-reply': true });

    // Shown masked; an edit of another field keeps the stored secret.
    const shown = await field('cfg-token').inputValue();
    assert.ok(shown.startsWith(AdminApi.SECRET_MASK_PREFIX) && !shown.includes('telegram-secret'), shown);
    await field('cfg-bot_username').fill('form_bot_renamed');
    await page.click('form[aria-label="bot"] button[type=submit]');
    await expectOk('Saved.');
    const saved = await prisma.bot.findFirstOrThrow({ where: { name } });
    assert.deepEqual(saved.adapterConfig, { token: '123456:telegram-secret-token', webhook_secret: 'hook-secret-value', bot_username: 'form_bot_renamed', 'enable-stream-reply': true });
    assert.equal(await field('bot-webhook-url').inputValue(), `https://bots.example.test/bots/${saved.id}`);

    // The same settings as JSON, masked too.
    await field('bot-json').check();
    const json = JSON.parse(await page.inputValue('#bot-settings'));
    assert.equal(json.bot_username, 'form_bot_renamed');
    assert.ok(String(json.token).startsWith(AdminApi.SECRET_MASK_PREFIX));
  });

  test("a bot's requests for a person set in its form; a keyword shows the chat waiting (navigation badge, list, transcript) until dismissed", async () => {
    await go(`#/bots/${sys.botId}`);
    await page.locator('.meta', { hasText: sys.botId }).waitFor();
    await field('bot-handoff-on').check();
    await field('bot-handoff-keywords').fill('operator\nperson please');
    await field('bot-handoff-webhook').fill('https://hooks.example.test/conveyor?key=hook-key-123');
    await page.click('form[aria-label="bot"] button[type=submit]');
    await expectOk('Saved.');
    const row = await prisma.bot.findUniqueOrThrow({ where: { id: sys.botId } });
    assert.deepEqual(row.humanHandoff, { keywords: ['operator', 'person please'], tool: false, reply: DEFAULT_HUMAN_REQUEST_REPLY, webhookUrl: 'https://hooks.example.test/conveyor?key=hook-key-123' });
    // The saved bot is read again: the URL comes back masked.
    const shown = await waitUntil('the webhook URL shown masked', async () => {
      const value = await field('bot-handoff-webhook').inputValue();
      return value.startsWith(AdminApi.SECRET_MASK_PREFIX) ? value : undefined;
    }, UI_TIMEOUT);
    assert.ok(!shown.includes('hook-key'), shown);

    const launcherId = uniqueName('console-asker');
    const ack = await finalReply(sys, await send(sys, text(launcherId, 'Person please')));
    assert.equal(ack.json.message.at(-1).text, `[bot] ${DEFAULT_HUMAN_REQUEST_REPLY}`);
    await go('#/live');
    // The badge is read every 15 s and on every page change.
    await page.locator('#nav-waiting').waitFor({ timeout: 60_000 });
    assert.equal(Number(await page.locator('#nav-waiting').textContent()) >= 1, true);
    await page.locator(`#human-requests tr[data-chat="person:${launcherId}"]`).waitFor();
    await page.click(`#human-requests tr[data-chat="person:${launcherId}"] a`);
    await page.locator('#human-request-note').waitFor();
    await page.click('#human-request-dismiss');
    await expectOk('Request dismissed.');
    assert.equal(await prisma.humanRequest.count({ where: { launcherId } }), 0);
  });

  test('a skill installed from a zip is listed and inspected; a hostile zip is refused; a workspace folder is saved as a skill; both are deleted', async () => {
    const name = uniqueName('console-skill-');
    const zip = zipOf([{ name: `${name}/SKILL.md`, data: skillMd(name, 'Formats the weekly numbers.') }, { name: `${name}/scripts/run.sh`, data: '#!/bin/sh\necho hi\n' }]);
    await page.click('nav.sidebar a:has-text("Skills")');
    await page.locator('h1', { hasText: 'Skills' }).waitFor();
    await page.setInputFiles('#skill-file', { name: `${name}.zip`, mimeType: 'application/zip', buffer: zip });
    await page.click('form[aria-label="install a skill"] button[type=submit]');
    await expectOk(`Skill ${name} installed.`);
    const row = page.locator(`#skill-list tr[data-name="${name}"]`);
    await row.waitFor();
    assert.equal(await row.locator('td').nth(1).textContent(), 'Formats the weekly numbers.');
    assert.equal(await row.locator('td').nth(2).textContent(), '2', 'two files');

    await row.locator('a').click();
    await page.locator('h1', { hasText: `Skill ${name}` }).waitFor();
    assert.match((await page.locator('#skill-md').textContent()) ?? '', new RegExp(`name: ${name}\\ndescription: Formats the weekly numbers\\.`));
    await page.locator('#skill-files tr[data-path="scripts/run.sh"]').waitFor();
    await page.locator('#skill-files tr[data-path="SKILL.md"]').waitFor();

    // A zip reaching out of the skill's folder: the API's reason on the page, nothing stored.
    await go('#/skills');
    const before = await prisma.skill.count();
    await page.setInputFiles('#skill-file', { name: 'evil.zip', mimeType: 'application/zip', buffer: zipOf([{ name: 'SKILL.md', data: skillMd(uniqueName('evil-'), 'Climbs out.') }, { name: '../x.sh', data: 'x' }]) });
    await page.click('form[aria-label="install a skill"] button[type=submit]');
    await page.locator('form[aria-label="install a skill"] [role=alert]', { hasText: 'unsafe path' }).waitFor();
    assert.equal(await prisma.skill.count(), before);

    // A workspace as the sandbox stores it, with a folder the agent wrote.
    const saved = uniqueName('from-ws-');
    const dir = mkdtempSync(path.join(tmpdir(), 'console-ws-'));
    const workspaceId = `${uniqueName('pipe-')}/${sys.botId}/person_7`;
    try {
      mkdirSync(path.join(dir, 'out', saved), { recursive: true });
      writeFileSync(path.join(dir, 'out', saved, 'SKILL.md'), skillMd(saved, 'Saved from the sandbox.'));
      writeFileSync(path.join(dir, 'notes.txt'), 'scratch');
      await prisma.sandboxWorkspace.create({ data: { id: workspaceId, archive: new Uint8Array(await packDirectory(dir)), bytes: 2048, files: 2 } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await page.click('nav.sidebar a:has-text("Sandbox workspaces")');
    const wsRow = page.locator(`#workspace-list tr[data-id="${workspaceId}"]`);
    await wsRow.waitFor();
    assert.equal(await wsRow.locator('td').nth(1).textContent(), '2,048 bytes');
    await wsRow.locator('a:has-text("Save a folder as skill")').click();
    await page.locator('h1', { hasText: 'Skills' }).waitFor();
    assert.equal(await page.inputValue('#skill-workspace'), workspaceId, 'the workspace filled in');
    await page.fill('#skill-folder', `/workspace/out/${saved}`);
    await page.click('form[aria-label="save a skill from a workspace"] button[type=submit]');
    await expectOk(`Skill ${saved} installed.`);
    await page.locator(`#skill-list tr[data-name="${saved}"]`).waitFor();

    // Deleted after the browser's confirmation: the skill, then the workspace.
    await go(`#/skills/${name}`);
    await page.locator('h1', { hasText: `Skill ${name}` }).waitFor();
    await page.click('section > .buttons button.danger:has-text("Delete")');
    await page.locator('h1', { hasText: 'Skills' }).waitFor();
    await waitUntil('the skill gone', async () => (await prisma.skill.count({ where: { name } })) === 0 || undefined, UI_TIMEOUT);
    assert.equal(await page.locator(`#skill-list tr[data-name="${name}"]`).count(), 0);

    await go('#/workspaces');
    await wsRow.locator('button:has-text("Delete")').click();
    await wsRow.waitFor({ state: 'detached' });
    await expectOk(`Workspace ${workspaceId} deleted.`);
    assert.equal(await prisma.sandboxWorkspace.count({ where: { id: workspaceId } }), 0);
  });

  test("a pipeline's sandbox keys and its skill binding are set in its form", async () => {
    const pipelineId = uniqueName('console-box-');
    const skill = uniqueName('bound-skill-');
    assert.equal((await api.call('POST', '/pipelines/default/copy', { id: pipelineId })).status, 201);
    const installed = await fetch(`${admin.url}/api/v1/skills`, { method: 'POST', body: new Uint8Array(zipOf([{ name: 'SKILL.md', data: skillMd(skill, 'Bound by one pipeline.') }])), headers: { cookie: api.sessionCookie() ?? '', 'content-type': 'application/zip' } });
    assert.equal(installed.status, 201);
    await go(`#/pipelines/${pipelineId}`);
    await page.locator('h1', { hasText: `Pipeline ${pipelineId}` }).waitFor();
    const group = page.locator('details[data-path="ai.local-agent"]');
    if ((await group.getAttribute('open')) === null) await group.locator(':scope > summary').click();
    await field('cfg-ai.local-agent.box-enabled').check();
    await field('cfg-ai.local-agent.box-network').check();
    await field('cfg-ai.local-agent.box-session-id-template').selectOption('{launcher_type}_{launcher_id}_{sender_id}');
    assert.equal(await field('cfg-ai.local-agent.box-session-id-template').locator('option:checked').textContent(), 'One per sender in each chat');

    // Every installed skill by default; unchecked, the installed skills to pick from.
    assert.equal(await page.isChecked('#pipeline-skills-all'), true);
    await page.uncheck('#pipeline-skills-all');
    await page.check(`#pipeline-skills input[data-skill="${skill}"]`);
    await page.click('form[aria-label="pipeline"] button[type=submit]');
    await expectOk('Saved.');
    const stored = await prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } });
    const agent = (stored.config as { ai: { 'local-agent': Record<string, unknown> } }).ai['local-agent'];
    assert.deepEqual([agent['box-enabled'], agent['box-network'], agent['box-session-id-template']], [true, true, '{launcher_type}_{launcher_id}_{sender_id}']);
    const prefs = stored.extensionsPreferences as { enable_all_skills?: boolean; skills?: string[] };
    assert.deepEqual([prefs.enable_all_skills, prefs.skills], [false, [skill]]);
    assert.equal((await api.call('DELETE', `/skills/${skill}`)).status, 204);
  });
});
