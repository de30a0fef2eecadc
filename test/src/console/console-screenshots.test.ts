// The console's screens as the docs show them, taken from the real console over a real system with
// some traffic: the dashboard, a query's timeline, and a live conversation. `npm run screenshots`
// runs this file with SCREENSHOTS_DIR=docs/images to refresh the pictures the README and the docs
// show; under `npm test` they go to a temporary folder, and the test checks what each shows.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { waitUntil } from '../harness/wait.js';
import { finalReply, send, text } from '../e2e/pipeline-support.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { launchChromium, pinLocale, signIn } from './chromium.js';

const UI_TIMEOUT = 45_000;
const VIEWPORT = { width: 1280, height: 800 };
const QUESTIONS = [
  'What are your opening hours on Saturday?',
  'Can I change the delivery address of order 1042?',
  'Do you ship to Norway?',
  'How do I reset my password?',
  'Is the blue jacket available in size M?',
  'What is your return policy for sale items?',
];

/** A PNG's width and height, from its IHDR chunk. */
function pngSize(file: string): { width: number; height: number } {
  const bytes = readFileSync(file);
  assert.equal(bytes.subarray(1, 4).toString('latin1'), 'PNG', `${file} is a PNG`);
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe('console screenshots', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let api: AdminClient;
  let browser: Browser;
  let page: Page;
  let answered = '';
  const kept = process.env.SCREENSHOTS_DIR;
  const dir = kept ? path.resolve(kept) : mkdtempSync(path.join(tmpdir(), 'screenshots-'));
  const go = (hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);

  before(async () => {
    mkdirSync(dir, { recursive: true });
    sys = await startTestSystem();
    admin = await startAdmin(sys);
    api = new AdminClient(admin.url);
    await api.login();
    const model = await api.call('GET', '/models/fake');
    assert.equal((await api.call('PATCH', '/models/fake', { inputPricePerMTok: 2.5, outputPricePerMTok: 10 }, { 'if-match': String(model.body.version) })).status, 200);
    const settings = await api.call('GET', '/settings');
    assert.equal((await api.call('PUT', '/settings', { version: settings.body.version, monitoring: { ...settings.body.monitoring, showMessageText: true } })).status, 200);
    // Some traffic: six customers, two questions each, one model failure.
    sys.llm.setDefault((body) => ({ text: `Thanks for asking! Here is what I found about "${String(body.messages?.at(-1)?.content).slice(0, 60)}": our team answers within a day, and the help centre has the details.`, chunkSize: 12 }));
    for (const [i, question] of QUESTIONS.entries()) {
      const chat = `customer-${i + 1}`;
      await finalReply(sys, await send(sys, text(chat, question)), 60_000);
      await finalReply(sys, await send(sys, text(chat, 'Thank you!')), 60_000);
    }
    answered = (await waitUntil('the second customer\'s query logged', async () => (await api.call('GET', '/queries?launcherId=customer-2&limit=1')).body.items[0]?.id as string | undefined, 60_000));
    sys.llm.script({ error: { status: 503, message: 'the model is overloaded' } });
    await send(sys, text('customer-7', 'Are you there?'));
    await waitUntil('the failed query logged', async () => (await api.call('GET', '/queries?status=failed&limit=1')).body.items.length > 0 || undefined, 60_000);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: VIEWPORT });
    await pinLocale(page, 'en');
    page.setDefaultTimeout(UI_TIMEOUT);
    await signIn(page, admin.url, ADMIN_PASSWORD);
  });

  after(async () => {
    await browser?.close();
    await sys?.stop();
    if (!kept) rmSync(dir, { recursive: true, force: true });
  });

  test('the dashboard: the hour\'s messages, failures, latency and cost, per bot and model', async () => {
    await go('#/dashboard');
    await page.locator('#by-model tr[data-key="fake"]').waitFor();
    const file = path.join(dir, 'dashboard.png');
    await page.screenshot({ path: file });
    assert.deepEqual(pngSize(file), VIEWPORT);
    assert.ok(Number((await page.locator('#stat-rate').textContent())?.replace(/\D/g, '')) >= 12);
  });

  test('a query: its stages on a timeline, its model, usage, cost and trace id', async () => {
    await go(`#/queries/${answered}`);
    await page.locator('#query-stages li[data-stage="run local-agent"]').waitFor();
    await page.locator('#query-trace').waitFor();
    const file = path.join(dir, 'query-timeline.png');
    await page.screenshot({ path: file });
    assert.deepEqual(pngSize(file), VIEWPORT);
    assert.match((await page.locator('#query-trace').textContent()) ?? '', /[0-9a-f]{32}/);
  });

  test('a live conversation: the user\'s messages and the bot\'s streamed replies as they happen', async () => {
    const chat = `live-${randomUUID().slice(0, 6)}`;
    await go(`#/live?${new URLSearchParams({ botId: sys.botId, launcherType: 'person', launcherId: chat }).toString()}`);
    await page.locator('#live-transcript').waitFor();
    await finalReply(sys, await send(sys, text(chat, 'Where is my parcel? The tracking page has not changed since Monday.')), 60_000);
    await page.locator('#live-transcript li[data-role="bot"][data-final="true"]').waitFor();
    const file = path.join(dir, 'live-conversation.png');
    await page.screenshot({ path: file });
    assert.deepEqual(pngSize(file), VIEWPORT);
  });
});
