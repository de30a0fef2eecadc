// The console's pages for what the deployment holds, in Chromium as an operator uses them: a knowledge
// base made, a document uploaded and followed to ready (ingested by the runner from the fake OpenAI
// server's embeddings), re-indexed, refused, deleted; the plugins their heartbeats register; a bot's
// webhook URL and a gateway-held bot's lease; a Telegram bot made and edited through its settings form.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { Redis } from 'ioredis';
import { AdminApi, redisKeys } from '@conveyor/contracts';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { createPrismaClient, type PrismaClient } from '@conveyor/persistence';
import { NATS_URL, REDIS_URL, addBot, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { launchChromium, pinLocale } from './chromium.js';

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
    await page.goto(`${admin.url}/`);
    await page.fill('#username', 'admin');
    await page.fill('#password', ADMIN_PASSWORD);
    await page.click('main.signin button[type=submit]');
    await page.locator('nav.sidebar').waitFor();
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
    await form.locator('button[type=submit]').click();
    await expectOk('Settings saved.');
    await page.locator('h1', { hasText: `Knowledge base ${kbName} v2` }).waitFor();
    await page.locator('p.meta', { hasText: '4 chunks per question' }).waitFor();
    const stored = await prisma.knowledgeBase.findUniqueOrThrow({ where: { id: kbId } });
    assert.deepEqual([stored.name, stored.description, stored.topK, stored.rerankModelId, stored.chunkSize], [`${kbName} v2`, 'Where things are in the office', 4, 'rerank', 40]);
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

  test('the plugins page lists a plugin sending heartbeats with its version, events and bound pipelines', async () => {
    const name = `tests/${uniqueName('console-plugin')}`;
    plugin = await runPlugin({ name, version: '2.0.1', prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 500, handlers: { GroupNormalMessageReceived: () => undefined } });
    // The admin hears the heartbeats first; then the page, opened as an operator would, lists it.
    await waitUntil('the plugin registered', async () => AdminApi.PluginList.parse((await api.call('GET', '/plugins')).body).items.some((p) => p.name === name) || undefined, UI_TIMEOUT);
    await page.click('nav.sidebar a:has-text("Plugins")');
    const row = page.locator(`tr[data-name="${name}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual([cells[1], cells[2], cells[5]], ['2.0.1', 'GroupNormalMessageReceived', 'default']);
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
});
