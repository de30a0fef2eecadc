import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { Browser, Page } from 'playwright-core';
import pg from 'pg';
import { AdminApi, DeadLetter, QueryEnvelope } from '@conveyor/contracts';
import { NATS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { route } from '../harness/events.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp-server.js';
import { launchChromium, pinLocale } from './chromium.js';

/** Generous: several services share two loaded cores with the browser. */
const UI_TIMEOUT = 30_000;
const TRACE_TEMPLATE = 'http://traces.example.test/trace/{traceId}';
const PROMPT_V1 = 'You are the console test bot, version one.';
const PROMPT_V2 = 'You are the console test bot, version two.';

/** The system prompt of a chat request the fake model received. */
function systemPrompt(body: { messages?: { role: string; content?: unknown }[] }): string {
  const first = body.messages?.find((m) => m.role === 'system');
  return typeof first?.content === 'string' ? first.content : JSON.stringify(first?.content ?? '');
}

/** The web console in Chromium against the whole system: the admin service serves it and its API. */
describe('web console in Chromium', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let browser: Browser;
  let page: Page;
  let nc: NatsConnection;
  let mcp: FakeMcpHttp;
  const webChatToken = uniqueName('webchat-token-');
  const modelId = uniqueName('console-model');
  const pipelineId = uniqueName('console-pipeline');
  const botName = uniqueName('Console bot');

  const field = (id: string) => page.locator(`[id="${id}"]`);
  /** Opens the form's groups down to a key (sections start open, their groups folded). */
  const expand = async (path: string) => {
    const parts = path.split('.');
    for (let i = 1; i < parts.length; i++) {
      const group = page.locator(`details[data-path="${parts.slice(0, i).join('.')}"]`);
      if ((await group.getAttribute('open')) === null) await group.locator(':scope > summary').click();
    }
  };
  /** Waits for a success note; an error note shown instead fails at once with its text. */
  const expectOk = async (text: string) => {
    const ok = page.locator('.note.ok', { hasText: text });
    const alert = page.locator('[role=alert]').first();
    const shown = await Promise.race([ok.waitFor().then(() => undefined), alert.waitFor().then(() => alert.textContent())]);
    if (shown !== undefined) assert.fail(`expected "${text}", the page says: ${shown}`);
  };
  /** Client-side navigation, as the console's own links do. */
  const go = async (hash: string) => {
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  };

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken } });
    admin = await startAdmin(sys, {
      ADMIN_INGRESS_URL: sys.services.get('ingress').url,
      WEBCHAT_TOKEN: webChatToken,
      CONSOLE_TRACE_URL_TEMPLATE: TRACE_TEMPLATE,
      // The model's key comes from the runner's environment (CONVEYOR_KEY_E2E_LLM), not from the console.
      OTEL_SERVICE_NAME: 'conveyor-admin',
    });
    nc = await connect({ servers: NATS_URL });
    mcp = await startFakeMcpHttp();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    // These tests read the console's English words; console-i18n.test.ts walks both languages.
    await pinLocale(page, 'en');
    page.setDefaultTimeout(UI_TIMEOUT);
    // Every answer uses the pipeline's system prompt, so the page shows which prompt a reply was made with.
    sys.llm.setDefault((body) => ({ text: `Prompt said: ${systemPrompt(body)} ${Array.from({ length: 24 }, (_, i) => `w${i}`).join(' ')}`, tokensPerSecond: 12 }));
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await sys?.stop();
    await mcp?.close();
  });

  test('the console loads without sign-in only as files; a wrong password is refused, the right one signs in', async () => {
    const index = await fetch(`${admin.url}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type') ?? '', /text\/html/);
    const html = await index.text();
    assert.doesNotMatch(html, /https?:\/\//, 'no external origin: everything is bundled');
    assert.deepEqual(await (await fetch(`${admin.url}/console-config.json`)).json(), { traceUrlTemplate: TRACE_TEMPLATE });
    assert.equal((await fetch(`${admin.url}/api/v1/debug-chat/bots/${sys.botId}/session/events`)).status, 401, 'the debug chat needs a sign-in');

    await page.goto(`${admin.url}/`);
    await page.locator('form[aria-label="Sign in"]').waitFor();
    await page.fill('#username', 'admin');
    await page.fill('#password', 'not the password at all');
    await page.click('form[aria-label="Sign in"] button[type=submit]');
    await page.locator('.note.error').waitFor();
    await page.fill('#password', ADMIN_PASSWORD);
    await page.click('form[aria-label="Sign in"] button[type=submit]');
    await page.locator('nav.sidebar', { hasText: 'admin (admin)' }).waitFor();
    await page.locator('#stat-rate').waitFor();
  });

  test('creates a model on the fake OpenAI server, a pipeline with it, and a bot on the pipeline', async () => {
    await go(`#/models/new`);
    await page.fill('#model-id', modelId);
    // A preset fills the API kind and its base URL; the fields stay editable.
    await page.locator('#model-preset option[value="anthropic"]').waitFor({ state: 'attached' });
    await page.selectOption('#model-preset', 'anthropic');
    assert.equal(await page.inputValue('#model-base-url'), 'https://api.anthropic.com');
    assert.equal(await page.inputValue('#model-provider'), 'anthropic');
    await page.selectOption('#model-preset', 'deepseek');
    assert.equal(await page.inputValue('#model-provider'), 'openai');
    await page.fill('#model-base-url', sys.llm.url);
    await page.fill('#model-model', 'fake-model');
    await page.selectOption('#model-key-mode', 'env');
    await page.fill('#model-api-key-env', 'CONVEYOR_KEY_E2E_LLM');
    await page.click('form[aria-label="model"] button[type=submit]');
    await page.locator('h1', { hasText: `Model ${modelId}` }).waitFor();

    await go('#/pipelines/new');
    await page.fill('#pipeline-id', pipelineId);
    await page.fill('#pipeline-name', 'Console pipeline');
    await page.click('form[aria-label="new pipeline"] button[type=submit]');
    await page.locator('h1', { hasText: `Pipeline ${pipelineId}` }).waitFor();
    // The form comes from the config schema, under LangBot's key names.
    await page.locator('summary', { hasText: 'group-respond-rules' }).waitFor({ state: 'attached' });
    await expand('ai.local-agent.model');
    await field('cfg-ai.local-agent.model').fill(modelId);
    await field('cfg-ai.local-agent.prompt.0.content').fill(PROMPT_V1);
    // Checked in the browser before saving: a bad value names its key and blocks nothing else.
    await expand('safety.rate-limit.window-length');
    await field('cfg-safety.rate-limit.window-length').fill('0');
    await page.locator('#pipeline-check', { hasText: 'safety.rate-limit.window-length' }).waitFor();
    await page.click('form[aria-label="pipeline"] button[type=submit]');
    await page.locator('form[aria-label="pipeline"] [role=alert]', { hasText: 'window-length' }).waitFor();
    await field('cfg-safety.rate-limit.window-length').fill('60');
    await page.locator('#pipeline-check', { hasText: 'The config is valid.' }).waitFor();
    // The raw JSON view shows the same config.
    await page.click('button[role=tab]:has-text("Raw JSON")');
    assert.match(await page.inputValue('#pipeline-json'), new RegExp(PROMPT_V1.replaceAll('.', '\\.')));
    await page.click('button[role=tab]:has-text("Form")');
    await page.click('form[aria-label="pipeline"] button[type=submit]');
    await expectOk('Saved.');

    await go('#/bots/new');
    await page.fill('#bot-name', botName);
    await page.selectOption('#bot-adapter', 'http-bot');
    await page.locator(`#bot-pipeline option[value="${pipelineId}"]`).waitFor({ state: 'attached' });
    await page.selectOption('#bot-pipeline', pipelineId);
    // The settings form comes from the http-bot platform's schema.
    await field('cfg-inbound_secret').fill('console-inbound-secret');
    await field('cfg-callback_url').fill(`${sys.callbacks.url}/callback`);
    await page.click('form[aria-label="bot"] button[type=submit]');
    await page.locator('h1', { hasText: `Bot ${botName}` }).waitFor();

    const api = new AdminClient(admin.url);
    await api.login();
    const pipeline = (await api.call('GET', `/pipelines/${pipelineId}`)).body;
    assert.equal(pipeline.config.ai['local-agent'].model, modelId);
    assert.equal(pipeline.config.ai['local-agent'].prompt[0].content, PROMPT_V1);
    assert.equal(pipeline.botIds.length, 1);
  });

  let firstQueryId = '';

  test('the debug chat streams the answer; the query is in the log with its timeline and trace link', async () => {
    await go(`#/chat?pipeline=${encodeURIComponent(pipelineId)}`);
    await page.locator('.chat-status', { hasText: 'connected' }).waitFor();
    await page.fill('#chat-text', 'hello from the console');
    await page.click('#chat-send');
    // Streamed: the bubble is seen growing before it settles on the final text.
    await page.locator('.msg.bot.streaming').first().waitFor();
    const final = page.locator('.msg.bot:not(.streaming)', { hasText: 'w23' });
    await final.waitFor();
    assert.match((await final.textContent()) ?? '', new RegExp(`Prompt said: ${PROMPT_V1.replaceAll('.', '\\.')}`));
    firstQueryId = (await final.getAttribute('data-query')) ?? '';
    assert.ok(firstQueryId, 'the answer names its query');

    await final.locator('a.msg-query').click();
    await page.locator('h1', { hasText: `Query ${firstQueryId}` }).waitFor();
    await waitUntil('the query to be finished in the log', async () => {
      await page.click('button:has-text("Refresh")');
      return (await page.locator('#query-status').textContent()) === 'succeeded';
    }, UI_TIMEOUT, 500);
    await page.locator('.timeline li', { hasText: 'finished (succeeded)' }).waitFor();
    const link = page.locator('#query-trace a');
    const traceId = (await link.textContent()) ?? '';
    assert.match(traceId, /^[0-9a-f]{32}$/);
    assert.equal(await link.getAttribute('href'), TRACE_TEMPLATE.replace('{traceId}', traceId));

    // The list, filtered by the bot, shows the same query and trace.
    const botId = await findBotId();
    await go(`#/queries?botId=${botId}`);
    const row = page.locator(`tr[data-id="${firstQueryId}"]`);
    await row.waitFor();
    assert.equal(await row.locator('a.trace').getAttribute('href'), TRACE_TEMPLATE.replace('{traceId}', traceId));

    // A query whose trace was not sampled (as most are at a production ratio) says so instead of linking.
    const unsampled = `q-unsampled-${randomUUID()}`;
    const db = new pg.Client({ connectionString: sys.db.url });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO "QueryRecord" ("id", "botId", "launcherType", "launcherId", "status", "receivedAt", "traceId", "traceSampled") VALUES ($1, $2, 'person', 'u', 'succeeded', now(), $3, false)`,
        [unsampled, botId, 'ab'.repeat(16)],
      );
    } finally {
      await db.end();
    }
    await go(`#/queries/${unsampled}`);
    await page.locator('#query-trace', { hasText: 'not sampled' }).waitFor();
    assert.equal(await page.locator('#query-trace a').count(), 0, 'no link to a trace the backend does not have');
  });

  async function findBotId(): Promise<string> {
    const api = new AdminClient(admin.url);
    await api.login();
    const bots = AdminApi.Page(AdminApi.Bot).parse((await api.call('GET', '/bots')).body).items;
    const bot = bots.find((b) => b.name === botName);
    assert.ok(bot, 'the bot made in the console exists');
    return bot.id;
  }

  test('a prompt change saved in the console applies to the next answer without a restart', async () => {
    await go(`#/pipelines/${encodeURIComponent(pipelineId)}`);
    await page.locator('h1', { hasText: `Pipeline ${pipelineId}` }).waitFor();
    await expand('ai.local-agent.prompt');
    await field('cfg-ai.local-agent.prompt.0.content').fill(PROMPT_V2);
    await page.click('form[aria-label="pipeline"] button[type=submit]');
    await expectOk('Saved.');

    await go(`#/chat?pipeline=${encodeURIComponent(pipelineId)}`);
    await page.locator('.chat-status', { hasText: 'connected' }).waitFor();
    await page.fill('#chat-text', 'and now?');
    await page.click('#chat-send');
    const answer = page.locator('.msg.bot:not(.streaming)', { hasText: PROMPT_V2 });
    await answer.waitFor();
    assert.match((await answer.textContent()) ?? '', /w23/);
    assert.equal(sys.services.services.filter((s) => s.child.exitCode !== null).length, 0, 'no service restarted');
  });

  test('saving over a change made elsewhere says it was changed by someone else and offers a reload', async () => {
    await go(`#/pipelines/${encodeURIComponent(pipelineId)}`);
    await page.locator('h1', { hasText: `Pipeline ${pipelineId}` }).waitFor();
    // Someone else saves first.
    const api = new AdminClient(admin.url);
    await api.login();
    const current = (await api.call('GET', `/pipelines/${pipelineId}`)).body;
    const other = await api.call('PATCH', `/pipelines/${pipelineId}`, { name: 'Renamed elsewhere' }, { 'if-match': String(current.version) });
    assert.equal(other.status, 200);

    await page.fill('#pipeline-name', 'Renamed in the console');
    await page.click('form[aria-label="pipeline"] button[type=submit]');
    await page.locator('.note.error', { hasText: 'Changed by someone else' }).waitFor();
    await page.click('button:has-text("Reload")');
    await waitUntil('the reloaded name', async () => (await page.inputValue('#pipeline-name')) === 'Renamed elsewhere', UI_TIMEOUT, 200);
  });

  test('a dead letter is shown with its reason and resubmitted, and its query answered; another is discarded', async () => {
    // A query of the harness's HTTP-bot bot that a consumer gave up on, as the dead-letter stream keeps it.
    const session = uniqueName('dead-letter-session');
    const envelope = QueryEnvelope.parse({
      v: 1,
      queryId: randomUUID(),
      receivedAt: new Date().toISOString(),
      route: route(sys.botId, session),
      senderName: 'Dead letter',
      messageChain: [{ type: 'Plain', text: 'a question worth resubmitting' }],
    });
    const record = DeadLetter.parse({
      v: 1,
      source: 'orchestrator',
      stream: sys.topology.streams.queries.name,
      subject: sys.topology.subjects.query(sys.botId),
      deliveryCount: 5,
      reason: 'max_deliver',
      error: 'the orchestrator gave up after 5 deliveries',
      payloadBase64: Buffer.from(JSON.stringify(envelope)).toString('base64'),
      payloadTruncated: false,
      failedAt: new Date().toISOString(),
    });
    await jetstream(nc).publish(sys.topology.subjects.deadLetter('orchestrator'), JSON.stringify(record));

    await go('#/dead-letters');
    await page.click('button:has-text("Refresh")');
    const card = page.locator('article.dead-letter', { hasText: 'the orchestrator gave up after 5 deliveries' });
    await card.waitFor();
    await card.locator('summary').click();
    assert.match((await card.locator('pre').textContent()) ?? '', /a question worth resubmitting/);
    await card.locator('button:has-text("Resubmit")').click();
    await page.locator('.note.ok', { hasText: 'resubmitted' }).waitFor();
    await card.waitFor({ state: 'detached' });
    await sys.callbacks.waitFor((all) => all.some((c) => c.json?.session_id === session && c.json.is_final), UI_TIMEOUT);

    // Another one is discarded (after the browser's confirmation) and gone from the stream.
    const other = DeadLetter.parse({ ...record, error: 'a payload nobody wants back', failedAt: new Date().toISOString() });
    await jetstream(nc).publish(sys.topology.subjects.deadLetter('orchestrator'), JSON.stringify(other));
    await page.click('button:has-text("Refresh")');
    const unwanted = page.locator('article.dead-letter', { hasText: 'a payload nobody wants back' });
    await unwanted.waitFor();
    page.once('dialog', (d) => void d.accept());
    await unwanted.locator('button:has-text("Discard")').click();
    await page.locator('.note.ok', { hasText: 'discarded' }).waitFor();
    await unwanted.waitFor({ state: 'detached' });
    const api = new AdminClient(admin.url);
    await api.login();
    assert.deepEqual((await api.call('GET', '/dead-letters')).body.items, [], 'both are gone from the dead-letter stream');
  });

  test('the dashboard counts the messages of the last hour and their latency', async () => {
    await go('#/dashboard');
    await page.click('button:has-text("Refresh")');
    await waitUntil('the dashboard to count the console chats', async () => {
      const total = Number((await page.locator('#stat-rate').textContent())?.replace(/\D/g, '') ?? 0);
      return total >= 3 || (await page.click('button:has-text("Refresh")'), false);
    }, UI_TIMEOUT, 500);
    assert.match((await page.locator('#stat-p95').textContent()) ?? '', /\d+(\.\d+)? m?s/);
    assert.equal(await page.locator('#stat-dead').textContent(), '0');
  });

  test('a viewer sees the configuration but no way to change it', async () => {
    const api = new AdminClient(admin.url);
    await api.login();
    const created = await api.call('POST', '/users', { username: 'watcher', password: 'a viewer password', role: 'viewer' });
    assert.equal(created.status, 201);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await pinLocale(context, 'en');
    try {
      const viewer = await context.newPage();
      viewer.setDefaultTimeout(UI_TIMEOUT);
      await viewer.goto(`${admin.url}/#/pipelines/${encodeURIComponent(pipelineId)}`);
      await viewer.fill('#username', 'watcher');
      await viewer.fill('#password', 'a viewer password');
      await viewer.click('form[aria-label="Sign in"] button[type=submit]');
      await viewer.locator('nav.sidebar', { hasText: 'watcher (viewer)' }).waitFor();
      await viewer.locator('h1', { hasText: `Pipeline ${pipelineId}` }).waitFor();
      assert.equal(await viewer.locator('form[aria-label="pipeline"] button[type=submit]').isDisabled(), true, 'no save');
      assert.equal(await viewer.locator('[id="cfg-ai.runner.runner"]').isDisabled(), true, 'fields read-only');
      await viewer.evaluate(`location.hash = '#/models'`);
      await viewer.locator(`tr[data-id="${modelId}"]`).waitFor();
      assert.equal(await viewer.locator('a.button', { hasText: 'New model' }).count(), 0);
    } finally {
      await context.close();
    }
  });

  test('adds an MCP server, switched off, and tests the connection, which lists its tools', async () => {
    await go('#/mcp-servers/new');
    await page.fill('#mcp-id', 'console-mcp');
    await page.selectOption('#mcp-transport', 'http');
    await page.fill('#mcp-config', JSON.stringify({ url: mcp.url }));
    await page.locator('form[aria-label="MCP server"] label', { hasText: 'Enabled' }).locator('input').uncheck();
    await page.click('form[aria-label="MCP server"] button[type=submit]');
    await page.locator('h1', { hasText: 'MCP server console-mcp' }).waitFor();
    await page.click('form[aria-label="MCP server"] button:has-text("Test")');
    await expectOk('tools:');
    assert.match((await page.locator('.note.ok').textContent()) ?? '', /echo/);
    await go('#/mcp-servers');
    await page.locator('tr[data-id="console-mcp"]', { hasText: 'no' }).waitFor();
  });

  test('an API token created in the console works against the API; a setting changed in the console; the audit log shows both writes', async () => {
    await go('#/users');
    await page.locator('tr[data-id="watcher"]').locator('button:has-text("Disable")').click();
    await expectOk('watcher disabled');
    await page.locator('tr[data-id="watcher"] .user-status', { hasText: 'disabled' }).waitFor();
    assert.equal((await new AdminClient(admin.url).call('POST', '/auth/login', { username: 'watcher', password: 'a viewer password' })).status, 401, 'a disabled user cannot sign in');

    await go('#/tokens');
    await page.fill('#token-name', 'console automation');
    await page.selectOption('#token-role', 'admin');
    await page.click('form[aria-label="new token"] button[type=submit]');
    const secret = ((await page.locator('#token-secret').textContent()) ?? '').trim();
    assert.match(secret, /\S{20,}/);
    const bearer = { authorization: `Bearer ${secret}` };
    const before = await fetch(`${admin.url}/api/v1/settings`, { headers: bearer });
    assert.equal(before.status, 200, 'the new token signs API calls in');
    const tokenRow = page.locator('tr', { hasText: 'console automation' });
    await tokenRow.waitFor();

    await go('#/settings');
    await page.locator('#settings-command-prefix').waitFor();
    await page.selectOption('#settings-command-enable', 'on');
    await page.fill('#settings-command-prefix', '/ #');
    await page.click('form[aria-label="settings"] button[type=submit]');
    await expectOk('Settings saved');
    const after = AdminApi.InstanceSettings.parse(await (await fetch(`${admin.url}/api/v1/settings`, { headers: bearer })).json());
    assert.deepEqual(after.command, { enable: true, prefix: ['/', '#'], admins: null });

    await go('#/audit?resource=settings');
    await page.locator('tr[data-resource="settings"]', { hasText: 'command.prefix' }).waitFor();
    await page.selectOption('#audit-resource', 'api-token');
    await page.locator('tr[data-resource="api-token"]', { hasText: 'create' }).waitFor();
    assert.equal(await page.locator('tr[data-resource="settings"]').count(), 0, 'the filter shows one resource');

    // Revoked in the console, the token stops working at once.
    await go('#/tokens');
    page.once('dialog', (d) => void d.accept());
    await tokenRow.locator('button:has-text("Revoke")').click();
    await expectOk('revoked');
    assert.equal((await fetch(`${admin.url}/api/v1/settings`, { headers: bearer })).status, 401);
  });
});

/** The first start without a password: the setup link the admin logs opens the console's setup form. */
describe('web console first start in Chromium', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let browser: Browser;

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys, { CONVEYOR_ADMIN_PASSWORD: '' });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await sys?.stop();
  });

  test('the setup link creates the first admin, who stays signed in across a reload until signing out; an unconfigured debug chat says so', async () => {
    const match = await waitUntil('the setup link in the admin log', () => /\/setup#token=(\S+)/.exec(admin.logs.join('\n')) ?? undefined, UI_TIMEOUT);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await pinLocale(page, 'en');
    page.setDefaultTimeout(UI_TIMEOUT);
    await page.goto(`${admin.url}/setup#token=${match[1]}`);
    const form = page.locator('form[aria-label="Create the first admin"]');
    await form.waitFor();
    assert.equal(await page.inputValue('#setup-token'), match[1], 'the token comes from the link');
    await page.fill('#username', 'owner');
    await page.fill('#password', 'short');
    await form.locator('button[type=submit]').click();
    await form.locator('[role=alert]', { hasText: 'password' }).waitFor();
    await page.fill('#password', 'a long enough first password');
    await form.locator('button[type=submit]').click();
    await page.locator('nav.sidebar', { hasText: 'owner (admin)' }).waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the token leaves the address bar');

    await page.reload();
    await page.locator('nav.sidebar', { hasText: 'owner (admin)' }).waitFor();

    // This admin service was given no ingress: the debug chat says what to configure.
    await page.evaluate(`location.hash = '#/chat'`);
    await page.locator('#chat-text').waitFor();
    await page.fill('#chat-text', 'anyone there?');
    await page.click('#chat-send');
    await page.locator('.msg.error', { hasText: 'set ADMIN_INGRESS_URL and WEBCHAT_TOKEN' }).first().waitFor();

    await page.click('nav.sidebar button:has-text("Sign out")');
    await page.locator('form[aria-label="Sign in"]').waitFor();
    const me = await page.evaluate(`fetch('/api/v1/auth/me').then((r) => r.status)`);
    assert.equal(me, 401, 'signed out on the server too');
  });
});
