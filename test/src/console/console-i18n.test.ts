import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { Browser, Page } from 'playwright-core';
import pg from 'pg';
import { Redis } from 'ioredis';
import { AdminApi, DeadLetter, QueryEnvelope, redisKeys } from '@conveyor/contracts';
import { runPlugin, type RunningPlugin } from '@conveyor/plugin-sdk';
import { NATS_URL, REDIS_URL, startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { route } from '../harness/events.js';
import { uniqueName } from '../harness/ids.js';
import { waitUntil } from '../harness/wait.js';
import { ADMIN_PASSWORD, AdminClient, startAdmin } from '../admin/admin-support.js';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONSOLE_LOCALES, launchChromium, pinLocale, type ConsoleLocale } from './chromium.js';
import { packFiles } from '@conveyor/sandbox/skills';
import { skillMd, zipOf } from '../admin/skill-zip.js';

/** Generous: several services share two loaded cores with the browser. */
const UI_TIMEOUT = 30_000;

/**
 * Words a page in a language not written in Latin letters may show in them: product, protocol and
 * vendor names that such UIs (LangBot's among them) keep as they are, and the key placeholder of the
 * model form.
 */
const KEPT_IN_LATIN = new Set(['Conveyor', 'LangBot', 'OpenAI', 'Anthropic', 'Gemini', 'Ollama', 'AI', 'MCP', 'API', 'JSON', 'URL', 'ID', 'HTTP', 'Agent', 'Dify', 'n8n', 'Langflow', 'WeKnora', 'DeerFlow', 'Jaeger', 'base64', 'sk', 'CSV', 'DashScope', 'Alibaba', 'Tbox', 'Coze', 'Skill', 'Skills', 'Webhook', 'Token', 'zip', 'MB', 'ms', 'p50', 'p95', 'p99']);

/** An identifier in a sentence rather than a word: an environment variable, a dotted config key, a template placeholder (addresses are taken out before). */
const CODE_LIKE = [/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/, /^[a-z][a-z-]*(\.[a-z-]+)+$/, /^\{[A-Za-z]+\}$/];

/**
 * The page's visible words for a reader: text nodes of rendered elements (a closed select's options
 * count, being what the reader picks from), placeholders, titles and accessible names. Left out:
 * whatever the console marks `translate="no"` (data and identifiers: ids, names, JSON, LangBot's
 * config keys, the bot's and the user's chat messages) and the contents of text areas (values being
 * edited).
 */
const COLLECT_TEXT = `(() => {
  const out = [];
  const excluded = (el) => el.closest('[translate="no"], script, style, textarea, noscript');
  const shown = (el) => {
    const box = el.closest('option') ? el.closest('select') : el;
    return box !== null && box.checkVisibility({ visibilityProperty: true });
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || excluded(el) || !shown(el)) continue;
    const text = (n.textContent || '').trim();
    if (text) out.push(text);
  }
  for (const el of document.body.querySelectorAll('[placeholder], [title], [aria-label]')) {
    if (excluded(el) || !shown(el)) continue;
    for (const a of ['placeholder', 'title', 'aria-label']) {
      const v = el.getAttribute(a);
      if (v && v.trim()) out.push(v.trim());
    }
  }
  return out;
})()`;

/** Latin-letter words of a page in a non-Latin script that are neither kept names, identifiers nor the test's data. */
function untranslatedLatin(texts: readonly string[], data: ReadonlySet<string>): string[] {
  const found = new Set<string>();
  for (const raw of texts) {
    let text = raw;
    // The data may contain spaces or punctuation (a bot's name): taken out whole, longest first.
    for (const d of [...data].sort((a, b) => b.length - a.length)) text = text.split(d).join(' ');
    text = text.replace(/https?:\/\/\S+/g, ' ');
    for (const token of text.match(/[A-Za-z{][A-Za-z0-9_{}]*(?:[-.:/@][A-Za-z0-9_{}]+)*/g) ?? []) {
      if (KEPT_IN_LATIN.has(token) || CODE_LIKE.some((re) => re.test(token))) continue;
      found.add(`${token}  ← "${raw}"`);
    }
  }
  return [...found];
}

/** Characters of each script: Han and CJK punctuation, Japanese kana, Hangul, Cyrillic. */
const SCRIPTS = {
  han: /[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]/,
  kana: /[\u3040-\u30ff]/,
  hangul: /[\u1100-\u11ff\uac00-\ud7af]/,
  cyrillic: /[\u0400-\u04ff]/,
} as const;
type Script = keyof typeof SCRIPTS;

/** The scripts a page in each language may not show; and whether its words are written in Latin letters. */
const LANGUAGE_RULES: Record<ConsoleLocale, { foreign: Script[]; latin: boolean }> = {
  en: { foreign: ['han', 'kana', 'hangul', 'cyrillic'], latin: true },
  vi: { foreign: ['han', 'kana', 'hangul', 'cyrillic'], latin: true },
  'zh-Hans': { foreign: ['kana', 'hangul', 'cyrillic'], latin: false },
  'zh-Hant': { foreign: ['kana', 'hangul', 'cyrillic'], latin: false },
  ja: { foreign: ['hangul', 'cyrillic'], latin: false },
  ko: { foreign: ['han', 'kana', 'cyrillic'], latin: false },
  ru: { foreign: ['han', 'kana', 'hangul'], latin: false },
};

/** Text of another language's script on a page, and Latin words on a page in a non-Latin script. */
function untranslated(locale: ConsoleLocale, texts: readonly string[], data: ReadonlySet<string>): string[] {
  const rules = LANGUAGE_RULES[locale];
  const foreign = texts.filter((t) => rules.foreign.some((script) => SCRIPTS[script].test(t))).map((t) => `${t}  ← another script`);
  return [...foreign, ...(rules.latin ? [] : untranslatedLatin(texts, data))];
}

/**
 * Labels that do not fit on a 1280-pixel screen: the page scrolling sideways, or a button, tab,
 * navigation link, label, heading or column header whose text is cut by its own box or runs past the
 * screen's edge (inside a box that does not scroll sideways itself).
 */
const CLIPPED_LABELS = `(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width + 1) out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + width);
  const scrollsSideways = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX;
      if (x === 'auto' || x === 'scroll') return true;
    }
    return false;
  };
  for (const el of document.querySelectorAll('button, nav a, label, th, h1, h2, [role=tab], summary, legend')) {
    if (el.closest('[translate="no"]') || !el.checkVisibility({ visibilityProperty: true })) continue;
    const style = getComputedStyle(el);
    if (style.display === 'inline') continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0) continue;
    const text = (el.innerText || el.getAttribute('aria-label') || '').trim().slice(0, 60);
    if (el.scrollWidth > el.clientWidth + 1) out.push(text + ': its text is ' + el.scrollWidth + ' px in a ' + el.clientWidth + ' px box');
    else if (box.right > width + 1 && !scrollsSideways(el)) out.push(text + ': runs to ' + Math.round(box.right) + ' px, past the screen');
  }
  return out;
})()`;

/** Where the test leaves each page's screenshot: a folder of this run (CONVEYOR_CONSOLE_SCREENSHOTS keeps it). */
const SCREENSHOTS = process.env.CONVEYOR_CONSOLE_SCREENSHOTS ?? path.join(tmpdir(), `conveyor-console-i18n-${process.pid}`);

/** Every console page in Chromium in each of the console's languages: no other language's words, every label fitting the screen. */
describe('web console in every language', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let browser: Browser;
  let nc: NatsConnection;
  let api: AdminClient;
  const webChatToken = uniqueName('webchat-token-');
  const modelId = uniqueName('i18n-model-');
  const pipelineId = uniqueName('i18n-pipeline-');
  const pipelineName = uniqueName('i18n pipeline ');
  const botName = uniqueName('i18n bot ');
  const mcpId = uniqueName('i18n-mcp-');
  const reader = uniqueName('reader');
  const succeededQuery = `q-i18n-ok-${randomUUID()}`;
  const failedQuery = `q-i18n-failed-${randomUUID()}`;
  let botId = '';
  const embedModelId = uniqueName('i18n-embed-');
  const kbId = uniqueName('i18n-kb-');
  const kbName = uniqueName('i18n handbook ');
  const pluginName = `tests/${uniqueName('i18n-plugin')}`;
  const heldBotName = uniqueName('i18n held bot ');
  const leaseHolder = uniqueName('gateway-pod-');
  let heldBotId = '';
  const skillName = uniqueName('i18n-skill-');
  const workspaceId = `${uniqueName('i18n-pipe-')}/global`;
  let plugin: RunningPlugin | undefined;
  let redis: Redis | undefined;
  /** Every name and id of the system's rows, which pages show as they are. */
  const data = new Set<string>();

  before(async () => {
    sys = await startTestSystem({ serviceEnv: { WEBCHAT_ENABLED: 'true', WEBCHAT_TOKEN: webChatToken } });
    admin = await startAdmin(sys, { ADMIN_INGRESS_URL: sys.services.get('ingress').url, WEBCHAT_TOKEN: webChatToken });
    nc = await connect({ servers: NATS_URL });
    browser = await launchChromium();
    sys.llm.setDefault(() => ({ text: 'An answer from the fake model.', tokensPerSecond: 50 }));

    api = new AdminClient(admin.url);
    await api.login();
    const must = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
      const answer = await api.call(method, path, body, headers);
      assert.ok(answer.status >= 200 && answer.status < 300, `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body;
    };
    await must('POST', '/models', { id: modelId, baseUrl: sys.llm.url, model: 'fake-model', apiKeyEnv: 'CONVEYOR_KEY_E2E_LLM' });
    const created = await must('POST', '/pipelines', { id: pipelineId, name: pipelineName, config: {} });
    await must('PATCH', `/pipelines/${pipelineId}`, { config: { ...created.config, ai: { ...created.config.ai, runner: { runner: 'local-agent' }, 'local-agent': { ...created.config.ai?.['local-agent'], model: modelId } } } }, { 'if-match': String(created.version) });
    botId = (await must('POST', '/bots', { name: botName, adapter: 'http-bot', adapterConfig: { inbound_secret: 'i18n-inbound-secret', callback_url: `${sys.callbacks.url}/callback` }, pipelineId, enabled: true })).id;
    await must('POST', '/mcp-servers', { id: mcpId, transport: 'http', config: { url: 'http://127.0.0.1:9/mcp' }, enabled: false });
    await must('POST', '/users', { username: reader, password: 'a reader password', role: 'viewer' });

    // A knowledge base with one document ready and one failed (its reason is data, shown as it is).
    await must('POST', '/models', { id: embedModelId, baseUrl: sys.llm.url, model: 'fake-embed', apiKeyEnv: 'CONVEYOR_KEY_E2E_LLM', abilities: ['embedding'] });
    await must('POST', '/knowledge-bases', { id: kbId, name: kbName, embeddingModelId: embedModelId, chunkSize: 60, chunkOverlap: 0 });
    const uploadDocument = async (name: string, text: string) => {
      const form = new FormData();
      form.append(AdminApi.KNOWLEDGE_UPLOAD_FIELD, new Blob([text]), name);
      const res = await fetch(`${admin.url}/api/v1/knowledge-bases/${kbId}/documents`, { method: 'POST', body: form, headers: { cookie: api.sessionCookie() ?? '' } });
      assert.equal(res.status, 201, await res.text());
    };
    const settled = (name: string, status: string) => waitUntil(`${name} ${status}`, async () => ((await must('GET', `/knowledge-bases/${kbId}/documents`)).items as AdminApi.KnowledgeDocument[]).some((d) => d.name === name && d.status === status) || undefined, 60_000);
    await uploadDocument('notes.txt', 'The office opens at nine.');
    await settled('notes.txt', 'done');
    sys.llm.failEmbeddings({ status: 500, message: 'embedding backend down' });
    try {
      await uploadDocument('broken.txt', 'A note that cannot be embedded.');
      await settled('broken.txt', 'failed');
    } finally {
      sys.llm.failEmbeddings(undefined);
    }
    // A plugin beating, and a Discord bot whose connection a gateway replica holds.
    plugin = await runPlugin({ name: pluginName, version: '1.0.0', prefix: sys.prefix, natsUrl: NATS_URL, heartbeatMs: 1_000, handlers: { PersonNormalMessageReceived: () => undefined } });
    await waitUntil('the plugin registered', async () => ((await must('GET', '/plugins')).items as AdminApi.RegisteredPlugin[]).some((p) => p.name === pluginName) || undefined, 30_000);
    heldBotId = (await must('POST', '/bots', { name: heldBotName, adapter: 'discord', adapterConfig: { client_id: '42', token: 'i18n-discord-token' }, pipelineId, enabled: true })).id;
    redis = new Redis(REDIS_URL);
    await redis.set(redisKeys(sys.prefix).connectionLease(heldBotId), `${leaseHolder}|3`, 'PX', 600_000);

    // An installed skill and a sandbox workspace.
    const skillZip = zipOf([{ name: 'SKILL.md', data: skillMd(skillName, 'Formats the weekly numbers.') }, { name: 'scripts/run.sh', data: 'echo hi\n' }]);
    const installed = await fetch(`${admin.url}/api/v1/skills`, { method: 'POST', body: new Uint8Array(skillZip), headers: { cookie: api.sessionCookie() ?? '', 'content-type': AdminApi.SKILL_UPLOAD_CONTENT_TYPE } });
    assert.equal(installed.status, 201, await installed.text());

    // A dead letter, as the dead-letter stream keeps one a consumer gave up on.
    const envelope = QueryEnvelope.parse({ v: 1, queryId: randomUUID(), receivedAt: new Date().toISOString(), route: route(sys.botId, uniqueName('i18n-session-')), senderName: 'Dead letter', messageChain: [{ type: 'Plain', text: 'a question' }] });
    await jetstream(nc).publish(sys.topology.subjects.deadLetter('orchestrator'), JSON.stringify(DeadLetter.parse({
      v: 1, source: 'orchestrator', stream: sys.topology.streams.queries.name, subject: sys.topology.subjects.query(sys.botId), deliveryCount: 5, reason: 'max_deliver',
      error: 'the orchestrator gave up', payloadBase64: Buffer.from(JSON.stringify(envelope)).toString('base64'), payloadTruncated: false, failedAt: new Date().toISOString(),
    })));

    // A finished query and a failed one, so the query log and a timeline have every kind of step.
    const db = new pg.Client({ connectionString: sys.db.url });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "status", "receivedAt", "startedAt", "finishedAt", "traceId", "traceSampled")
         VALUES ($1, $2, $3, 'person', 'u1', 'succeeded', now() - interval '2 seconds', now() - interval '1900 milliseconds', now() - interval '1 second', $4, true)`,
        [succeededQuery, botId, pipelineId, 'cd'.repeat(16)],
      );
      await db.query(
        `INSERT INTO "QueryRecord" ("id", "botId", "pipelineId", "launcherType", "launcherId", "status", "receivedAt", "startedAt", "finishedAt", "error", "traceId", "traceSampled")
         VALUES ($1, $2, $3, 'group', 'g1', 'failed', now() - interval '3 seconds', now() - interval '2900 milliseconds', now() - interval '2 seconds', 'model down', $4, false)`,
        [failedQuery, botId, pipelineId, 'ef'.repeat(16)],
      );
      // What the runner and orchestrator record at a query's end: model, usage, cost and stage timings.
      await db.query(
        `UPDATE "QueryRecord" SET "model" = 'fake', "runner" = 'local-agent', "modelCalls" = 2, "inputTokens" = 120, "outputTokens" = 40, "cost" = 0.0012,
           "stages" = jsonb_build_array(jsonb_build_object('stage', 'PreProcessor', 'at', (EXTRACT(EPOCH FROM "startedAt") * 1000)::bigint, 'ms', 4),
             jsonb_build_object('stage', 'run local-agent', 'at', (EXTRACT(EPOCH FROM "startedAt") * 1000)::bigint + 10, 'ms', 700))
         WHERE "id" = $1`,
        [succeededQuery],
      );
      await db.query(
        `INSERT INTO "SandboxWorkspace" ("id", "revision", "archive", "bytes", "files", "updatedAt", "lastUsedAt") VALUES ($1, 1, $2, 7, 1, now(), now())`,
        [workspaceId, await packFiles(new Map([['notes.txt', Buffer.from('scratch')]]))],
      );
      // A chat's conversation, for the sessions page's viewer.
      const conversationId = randomUUID();
      await db.query(`INSERT INTO "Conversation" ("id", "botId", "launcherType", "launcherId", "pipelineId", "updatedAt") VALUES ($1, $2, 'person', 'u1', $3, now())`, [conversationId, botId, pipelineId]);
      await db.query(
        `INSERT INTO "ConversationMessage" ("conversationId", "seq", "role", "content") VALUES ($1, 1, 'user', '"a question"'), ($1, 2, 'assistant', '"an answer"')`,
        [conversationId],
      );
    } finally {
      await db.end();
    }

    for (const path of ['/models', '/pipelines', '/bots', '/mcp-servers', '/users']) {
      for (const row of (await must('GET', path)).items as { id?: string; name?: string; username?: string; pipelineId?: string }[]) {
        for (const v of [row.id, row.name, row.username, row.pipelineId]) if (v) data.add(v);
      }
    }
    for (const v of [succeededQuery, failedQuery, 'admin', 'fake-model', 'CONVEYOR_KEY_E2E_LLM', kbId, kbName, embedModelId, 'fake-embed', pluginName, leaseHolder, skillName, workspaceId]) data.add(v);
  });

  after(async () => {
    await plugin?.stop();
    if (heldBotId) await redis?.del(redisKeys(sys.prefix).connectionLease(heldBotId));
    redis?.disconnect();
    await browser?.close();
    await nc?.close();
    await sys?.stop();
  });

  /**
   * Fails with every untranslated word of the page as it is now, and with every label that does not
   * fit the screen; leaves a screenshot of the page.
   */
  async function expectOneLanguage(page: Page, locale: ConsoleLocale, where: string): Promise<void> {
    // Folded parts are opened, so their labels are read too.
    await page.evaluate(`document.querySelectorAll('details').forEach((d) => { d.open = true; })`);
    const texts: string[] = await page.evaluate(COLLECT_TEXT);
    assert.ok(texts.length > 3, `${where}: the page shows text`);
    assert.deepEqual(untranslated(locale, texts, data), [], `${where} in ${locale}: untranslated text`);
    assert.equal(await page.evaluate('document.documentElement.lang'), locale);
    const folder = path.join(SCREENSHOTS, locale);
    mkdirSync(folder, { recursive: true });
    await page.screenshot({ path: path.join(folder, `${String(++shots).padStart(2, '0')}-${where.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}.png`), fullPage: true });
    assert.deepEqual(await page.evaluate(CLIPPED_LABELS), [], `${where} in ${locale}: labels that do not fit a 1280-pixel screen`);
  }
  let shots = 0;

  const notBusy = (page: Page) => waitUntil('the page to finish loading', async () => (await page.locator('.busy').count()) === 0, UI_TIMEOUT, 100);

  for (const locale of CONSOLE_LOCALES) {
    test(`every page in ${locale}: no word of another language, every label fits a 1280-pixel screen, <html lang> set`, async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: locale === 'en' ? 'zh-CN' : 'en-US' });
      // The stored choice wins over the browser's languages (set to the other one here).
      await pinLocale(context, locale);
      const page = await context.newPage();
      page.setDefaultTimeout(UI_TIMEOUT);
      // The browser's own dialogs (confirm, prompt) carry the console's words too.
      const dialogs: string[] = [];
      page.on('dialog', (d) => { dialogs.push(d.message()); void d.accept(); });
      const visit = async (hash: string, ready: string, where = hash) => {
        await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
        await page.locator(ready).first().waitFor();
        await notBusy(page);
        await expectOneLanguage(page, locale, where);
      };
      try {
        await page.goto(`${admin.url}/`);
        await page.locator('#username').waitFor();
        await expectOneLanguage(page, locale, 'sign-in');
        await page.fill('#username', 'admin');
        await page.fill('#password', ADMIN_PASSWORD);
        await page.click('main.signin button[type=submit]');
        await page.locator('nav.sidebar').waitFor();

        await visit('#/dashboard', '#stat-rate');
        await visit('#/models', `tr[data-id="${modelId}"]`);
        await visit('#/models/new', '#model-id');
        await visit(`#/models/${modelId}`, '#model-name');
        await visit('#/pipelines', `tr[data-id="${pipelineId}"]`);
        await visit('#/pipelines/new', '#pipeline-id');
        await visit(`#/pipelines/${pipelineId}`, '#pipeline-check');
        // The skill binding's choices, shown once "every skill" is unchecked (not saved).
        await page.uncheck('#pipeline-skills-all');
        await page.locator(`#pipeline-skills input[data-skill="${skillName}"]`).waitFor();
        await expectOneLanguage(page, locale, 'pipeline skill binding');
        await page.click('button[role=tab] >> nth=1');
        await page.locator('#pipeline-json').waitFor();
        await expectOneLanguage(page, locale, 'pipeline raw JSON');
        await visit('#/bots', `tr[data-id="${botId}"]`);
        await visit('#/bots/new', '[id="cfg-inbound_secret"]');
        await page.check('#bot-json');
        await page.locator('#bot-settings').waitFor();
        await expectOneLanguage(page, locale, 'new bot settings as JSON');
        await visit(`#/bots/${botId}`, '#bot-webhook-path');
        await visit(`#/bots/${heldBotId}`, '.connection[data-state="held"]');
        await visit('#/knowledge-bases', `tr[data-id="${kbId}"]`);
        await visit('#/knowledge-bases/new', '#kb-embedding-model:has(option)');
        await visit(`#/knowledge-bases/${kbId}`, 'tr[data-name="broken.txt"][data-status="failed"]');
        await visit('#/plugins', `tr[data-name="${pluginName}"]`);
        await visit('#/skills', `tr[data-name="${skillName}"]`);
        await visit(`#/skills/${skillName}`, '#skill-files tr[data-path="scripts/run.sh"]');
        await visit('#/workspaces', `tr[data-id="${workspaceId}"]`);
        await visit('#/mcp-servers', `tr[data-id="${mcpId}"]`);
        await visit('#/mcp-servers/new', '#mcp-id');
        await visit(`#/mcp-servers/${mcpId}`, '.meta');
        await visit('#/queries', `tr[data-id="${failedQuery}"]`);
        await visit(`#/queries/${succeededQuery}`, '.timeline li >> nth=2');
        await visit(`#/queries/${failedQuery}`, '.timeline li.failed');
        await visit('#/dead-letters', 'article.dead-letter');
        await visit('#/dashboard', '#by-model tr[data-key="fake"]');
        await page.selectOption('#dash-range', 'custom');
        await page.locator('#dash-from').waitFor();
        await expectOneLanguage(page, locale, 'dashboard with a custom range');
        await page.selectOption('#dash-range', '1h');
        await visit('#/errors', `#error-log tr[data-id="${failedQuery}"]`);
        await visit('#/sessions', '#session-list tr[data-chat="person:u1"]');
        await visit('#/live', '#live-sessions');
        await visit(`#/live?botId=${encodeURIComponent(botId)}&launcherType=person&launcherId=u1`, '#live-transcript');
        await visit(`#/sessions?botId=${encodeURIComponent(botId)}&launcherType=person&launcherId=u1`, '.conv-msg[data-role="assistant"]');
        await visit(`#/queries/${succeededQuery}`, '#query-stages li[data-stage="run local-agent"]');

        await visit(`#/chat?pipeline=${encodeURIComponent(pipelineId)}`, '.chat-status .dot.on');
        await page.fill('#chat-text', `hello in ${locale}`);
        await page.click('#chat-send');
        await page.locator('.msg.bot:not(.streaming) a.msg-query').waitFor();
        await expectOneLanguage(page, locale, 'chat with an answer');
        await page.click('.chat-status button');
        await page.locator('.msg.system').waitFor();
        await expectOneLanguage(page, locale, 'chat after a reset');

        await visit('#/settings', '#settings-command-prefix');
        if (!(await page.isChecked('#settings-banwords-on'))) await page.check('#settings-banwords-on');
        await page.locator('#settings-banwords-words').waitFor();
        await expectOneLanguage(page, locale, 'settings with ban words');

        await visit('#/users', `tr[data-id="${reader}"]`);
        // Disabled in one run, enabled again in the other: either way a note in the page's language.
        await page.locator(`tr[data-id="${reader}"] button >> nth=1`).click();
        await page.locator('.note.ok').waitFor();
        await expectOneLanguage(page, locale, 'users with a note');

        await visit('#/tokens', '#token-name');
        await page.fill('#token-name', `i18n token ${locale}`);
        data.add(`i18n token ${locale}`);
        await page.click('form:has(#token-name) button[type=submit]');
        await page.locator('#token-secret').waitFor();
        await page.locator(`tr:has-text("i18n token ${locale}")`).waitFor();
        await expectOneLanguage(page, locale, 'tokens with a new one');
        await page.locator(`tr:has-text("i18n token ${locale}") button`).click();
        await page.locator(`tr:has-text("i18n token ${locale}")`).waitFor({ state: 'detached' });
        await expectOneLanguage(page, locale, 'tokens after a revoke');
        assert.equal(dialogs.length, 1, 'the revoke asked first');
        assert.deepEqual(untranslated(locale, dialogs, data), [], `the dialogs in ${locale}`);

        await visit('#/audit', 'tr[data-resource]');
      } finally {
        await context.close();
      }
    });
  }

  test('the label check catches a label its box cuts, one past the screen, and a page that scrolls sideways', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(UI_TIMEOUT);
      await page.goto(`${admin.url}/`);
      await page.locator('#username').waitFor();
      assert.deepEqual(await page.evaluate(CLIPPED_LABELS), []);
      await page.evaluate(`(() => {
        const cut = document.createElement('button');
        cut.style.cssText = 'width: 60px; white-space: nowrap; overflow: hidden';
        cut.textContent = 'a label far too long for its button';
        const far = document.createElement('label');
        far.style.cssText = 'display: block; position: absolute; left: 1250px; width: 200px';
        far.textContent = 'past the edge';
        document.body.append(cut, far);
      })()`);
      const found: string[] = await page.evaluate(CLIPPED_LABELS);
      assert.equal(found.length, 3, found.join('\n'));
      assert.match(found[0]!, /scrolls sideways/);
      assert.match(found[1]!, /^a label far too long for its button: its text is \d+ px in a \d+ px box$/);
      assert.match(found[2]!, /^past the edge: runs to 1450 px, past the screen$/);
    } finally {
      await context.close();
    }
  });

  test("with nothing stored the browser's language decides; the switcher changes every word and is remembered", async () => {
    const chinese = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    const english = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-GB' });
    try {
      const page = await chinese.newPage();
      page.setDefaultTimeout(UI_TIMEOUT);
      await page.goto(`${admin.url}/`);
      await page.locator('#username').waitFor();
      assert.equal(await page.evaluate('document.documentElement.lang'), 'zh-Hans');
      assert.equal(await page.textContent('main.signin h1'), 'Conveyor 控制台');
      assert.equal(await page.title(), 'Conveyor 控制台');

      await page.selectOption('#language', 'en');
      await page.locator('main.signin h1', { hasText: 'Conveyor console' }).waitFor();
      assert.equal(await page.evaluate('document.documentElement.lang'), 'en');
      await page.reload();
      await page.locator('main.signin h1', { hasText: 'Conveyor console' }).waitFor();

      // Signed in, the switcher in the sidebar changes the page in place.
      await page.fill('#username', 'admin');
      await page.fill('#password', ADMIN_PASSWORD);
      await page.click('main.signin button[type=submit]');
      await page.locator('nav.sidebar a', { hasText: 'Dashboard' }).waitFor();
      await page.selectOption('nav.sidebar #language', 'zh-Hans');
      await page.locator('nav.sidebar a', { hasText: '仪表盘' }).waitFor();
      await page.locator('main.content h1', { hasText: '仪表盘' }).waitFor();
      assert.equal(await page.evaluate('document.documentElement.lang'), 'zh-Hans');

      const other = await english.newPage();
      other.setDefaultTimeout(UI_TIMEOUT);
      await other.goto(`${admin.url}/`);
      await other.locator('main.signin h1', { hasText: 'Conveyor console' }).waitFor();
      assert.equal(await other.evaluate('document.documentElement.lang'), 'en');
    } finally {
      await chinese.close();
      await english.close();
    }
  });
});

describe('finding untranslated text', () => {
  test('Latin words on a Chinese page are caught unless names, identifiers or data; another script on a page is caught', () => {
    const data = new Set(['i18n bot 1a2b', 'admin']);
    assert.deepEqual(untranslated('zh-Hans', ['机器人 i18n bot 1a2b', 'admin（管理员）', '兼容 OpenAI 的接口，例如 https://api.openai.com/v1', '默认：编排器的 COMMAND_ENABLE', 'LangBot 的 command.enable'], data), []);
    assert.deepEqual(untranslated('zh-Hans', ['保存', 'Refresh'], data), ['Refresh  ← "Refresh"']);
    assert.deepEqual(untranslated('en', ['Save', '保存'], data), ['保存  ← another script']);
    assert.deepEqual(untranslated('ru', ['Сохранить', 'Save', '保存'], data), ['保存  ← another script', 'Save  ← "Save"']);
    assert.deepEqual(untranslated('ja', ['保存する', '저장'], data), ['저장  ← another script']);
    assert.deepEqual(untranslated('vi', ['Lưu', 'Сохранить'], data), ['Сохранить  ← another script']);
  });
});
