import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import pg from 'pg';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { launchChromium, pinLocale, signIn } from './chromium.js';

/** Generous: several services share two loaded cores with the browser. */
const UI_TIMEOUT = 30_000;

/**
 * The console's monitoring pages in Chromium, as an operator uses them: the dashboard's range and
 * breakdowns from the server, the CSV export, the error log, sessions with their conversations (text
 * behind the setting) and a query's stage timeline.
 */
describe('web console in Chromium: monitoring', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  let browser: Browser;
  let page: Page;
  let pool: pg.Pool;
  let answered: string;
  const chat = `mon-ui-${randomUUID().slice(0, 8)}`;
  const failedId = randomUUID();

  /** A `datetime-local` value (the browser's local time, which is this machine's). */
  const localInput = (ms: number) => {
    const d = new Date(ms);
    const two = (n: number) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
  };
  const go = (hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);

  before(async () => {
    sys = await startTestSystem();
    sys.llm.setDefault((body) => ({ text: `echo: ${body.messages?.at(-1)?.content}` }));
    admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    pool = new pg.Pool({ connectionString: sys.db.url, max: 2 });
    const model = await api.call('GET', '/models/fake');
    assert.equal((await api.call('PATCH', '/models/fake', { inputPricePerMTok: 500, outputPricePerMTok: 1500 }, { 'if-match': String(model.body.version) })).status, 200);
    await waitUntil('a run costed at the new prices', async () => {
      await finalReply(sys, await send(sys, text(chat, `hello ${randomUUID()}`)));
      const q = (await api.call('GET', `/queries?launcherId=${chat}&limit=1`)).body.items[0];
      if (q?.cost > 0) answered = q.id;
      return q?.cost > 0;
    }, 60_000, 500);
    await pool.query(
      `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "status", "receivedAt", "finishedAt", "error", "model", "runner")
       VALUES ($1, $2, 'default', 'person', 'mon-ui-broken', 'failed', now() - interval '2 minutes', now() - interval '1 minute', 'the model said no: 503', 'fake', 'local-agent')`,
      [failedId, sys.botId],
    );
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 900 }, acceptDownloads: true });
    await pinLocale(page, 'en');
    page.setDefaultTimeout(UI_TIMEOUT);
    await signIn(page, admin.url, ADMIN_PASSWORD);
  });

  after(async () => {
    await browser?.close();
    await pool?.end();
    await sys?.stop();
  });

  test('the dashboard shows the range\'s messages, tokens and cost per model; a filter and another range change them', async () => {
    await go('#/dashboard');
    await page.locator('#by-model tr[data-key="fake"]').waitFor();
    assert.ok(Number((await page.locator('#stat-rate').textContent())?.replace(/\D/g, '')) >= 1);
    assert.notEqual(await page.locator('#stat-cost').textContent(), '—');
    assert.ok(Number((await page.locator('#stat-errors').textContent())?.replace(/\D/g, '')) >= 1);
    const cells = await page.locator('#by-model tr[data-key="fake"] td').allTextContents();
    assert.ok(Number(cells[1]) >= 1 && Number(cells[2]) >= 1, cells.join('|'));
    await page.locator('#by-pipeline tr[data-key="default"]').waitFor();
    await page.locator(`#by-bot tr[data-key="${sys.botId}"]`).waitFor();

    await page.selectOption('#dash-range', '7d');
    await page.locator('#dash-export[href*="range=7d"]').waitFor();
    await page.selectOption('#dash-model', 'fake');
    await page.locator('#dash-export[href*="model=fake"]').waitFor();
    await page.locator('#by-model tr[data-key="fake"]').waitFor();
    await page.selectOption('#dash-range', 'custom');
    await page.locator('#dash-from').waitFor();
    await page.locator('#dash-export[href*="range=custom"]').waitFor();
    // A custom window a week back holds none of this run's queries; one around now holds them again.
    await page.fill('#dash-from', localInput(Date.now() - 8 * 86_400_000));
    await page.fill('#dash-to', localInput(Date.now() - 7 * 86_400_000));
    await page.locator('#stat-rate', { hasText: /^0$/ }).waitFor();
    assert.equal(await page.locator('#by-model tr[data-key="fake"]').count(), 0, 'no model calls in a window before the run');
    const weekBack = new URL(String(await page.locator('#dash-export').getAttribute('href')), admin.url);
    assert.ok(Date.parse(weekBack.searchParams.get('to') ?? '') < Date.now() - 6 * 86_400_000, `the export asks for the window: ${weekBack.search}`);
    await page.fill('#dash-from', localInput(Date.now() - 3_600_000));
    await page.fill('#dash-to', localInput(Date.now() + 3_600_000));
    await page.locator('#by-model tr[data-key="fake"]').waitFor();
    assert.ok(Number((await page.locator('#stat-rate').textContent())?.replace(/\D/g, '')) >= 1);
    await page.selectOption('#dash-range', '1h');
    await page.selectOption('#dash-model', '');
  });

  test('the CSV export downloads the range\'s query log', async () => {
    await go('#/dashboard');
    await page.locator('#by-model tr[data-key="fake"]').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dash-export')]);
    assert.equal(download.suggestedFilename(), 'queries-1h.csv');
    const path = await download.path();
    const { readFile } = await import('node:fs/promises');
    const csv = await readFile(path, 'utf8');
    assert.match(csv, /^id,receivedAt,finishedAt,status,/);
    assert.ok(csv.includes(`${answered},`) && csv.includes(failedId));
  });

  test('the error log lists the failed query with its reason and links to it', async () => {
    await page.click('nav.sidebar a:has-text("Error log")');
    const row = page.locator(`#error-log tr[data-id="${failedId}"]`);
    await row.waitFor();
    assert.equal(await row.locator('.error-text').textContent(), 'the model said no: 503');
    await row.locator('a').click();
    await page.locator('#query-status[data-status="failed"]').waitFor();
  });

  test('sessions show the chat\'s conversation; its text only after the operator allows it in the settings', async () => {
    await page.click('nav.sidebar a:has-text("Sessions")');
    const row = page.locator(`#session-list tr[data-chat="person:${chat}"]`);
    await row.waitFor();
    await row.locator('a').click();
    await page.locator('#text-hidden').waitFor();
    await page.locator('.conversation .conv-msg[data-role="user"]', { hasText: 'characters' }).first().waitFor();
    assert.equal(await page.locator('.conv-text').count(), 0, 'no message text while the setting is off');

    await page.click('nav.sidebar a:has-text("Settings")');
    await page.locator('#settings-show-message-text').check();
    await page.click('form[aria-label] button[type=submit]');
    await page.locator('.note.ok').waitFor();
    await go(`#/sessions?botId=${encodeURIComponent(sys.botId)}&launcherType=person&launcherId=${encodeURIComponent(chat)}`);
    await page.locator('.conv-msg[data-role="assistant"] .conv-text', { hasText: 'echo: hello' }).first().waitFor();
    assert.equal(await page.locator('#text-hidden').count(), 0);
  });

  test('the query detail shows the model, usage and cost and the timeline of its stages', async () => {
    await go(`#/queries/${answered}`);
    await page.locator('#query-stages li[data-stage="run local-agent"]').waitFor();
    await page.locator('#query-stages li[data-stage="MessageProcessor"]').waitFor();
    await page.locator('#query-stages li[data-stage="queued"]').waitFor();
    assert.match((await page.locator('#query-model').textContent()) ?? '', /^fake \(local-agent\)$/);
    assert.match((await page.locator('#query-usage').textContent()) ?? '', /^1 model calls, \d+ input and \d+ output tokens$/);
    assert.notEqual(await page.locator('#query-cost').textContent(), '—');
  });

  test('the model form keeps the prices', async () => {
    await go('#/models/fake');
    await page.locator('#model-input-price').waitFor();
    assert.equal(await page.locator('#model-input-price').inputValue(), '500');
    await page.fill('#model-output-price', '');
    await page.click('form[aria-label] button[type=submit]');
    await page.locator('.note.ok').waitFor();
    const model = await api.call('GET', '/models/fake');
    assert.deepEqual([model.body.inputPricePerMTok, model.body.outputPricePerMTok], [500, null]);
  });
});
