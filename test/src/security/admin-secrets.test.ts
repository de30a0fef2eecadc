import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdminApi } from '@conveyor/contracts';
import { createPrismaClient, type PrismaClient } from '@conveyor/persistence';
import { startTestSystem, type TestSystem } from '../harness/system.js';
import type { RunningService } from '../harness/services.js';
import { uniqueName } from '../harness/ids.js';
import { AdminClient, startAdmin, type ApiAnswer } from '../admin/admin-support.js';

/**
 * Secrets written through the API (bot settings of every platform, every external runner's settings,
 * a model key, an MCP server's headers and environment) carry a canary unique to this run; no answer
 * to an admin or a viewer may contain one, on any read route the router has.
 */
describe('admin API: secrets written are never read back', () => {
  let sys: TestSystem;
  let admin: RunningService;
  let prisma: PrismaClient;
  let adminApi: AdminClient;
  let viewerApi: AdminClient;
  const canary = uniqueName('Canary');
  /** Ids and names: not secrets, so they carry a tag of their own. */
  const tag = uniqueName('r');
  /** Everything the API answered during the test, with what was asked. */
  const answers: Array<{ who: string; what: string; answer: ApiAnswer }> = [];
  const secret = (name: string) => `${canary}-${name}-0123456789`;
  /** WeCom's key is 43 letters and digits: the canary, padded. */
  const wecomAesKey = `${canary}${'A'.repeat(43)}`.slice(0, 43);

  const record = async (who: string, client: AdminClient, method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
    const answer = await client.call(method, path, body, headers);
    answers.push({ who, what: `${method} ${path}`, answer });
    return answer;
  };
  const asAdmin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => record('admin', adminApi, method, path, body, headers);

  const bots: Record<string, Record<string, unknown>> = {
    lark: { app_id: 'cli_canary', app_secret: secret('lark-app-secret'), 'encrypt-key': secret('lark-encrypt-key'), 'verification-token': secret('lark-verification-token') },
    wecom: { corpid: 'ww-canary', secret: secret('wecom-secret'), token: secret('wecom-token'), EncodingAESKey: wecomAesKey, contacts_secret: secret('wecom-contacts') },
    'http-bot': { inbound_secret: secret('http-inbound'), outbound_secret: secret('http-outbound'), callback_url: 'http://127.0.0.1:9/cb' },
    telegram: { token: secret('telegram-token'), webhook_secret: secret('telegram-webhook') },
    slack: { bot_token: secret('slack-bot'), signing_secret: secret('slack-signing'), app_token: `xapp-${secret('slack-app')}` },
    discord: { client_id: '1', token: secret('discord-token') },
    line: { channel_access_token: secret('line-access'), channel_secret: secret('line-secret') },
    dingtalk: { client_id: 'ding', client_secret: secret('dingtalk-secret') },
    onebot: { 'access-token': secret('onebot-token') },
    kook: { token: secret('kook-token') },
    satori: { endpoint: 'http://127.0.0.1:9', token: secret('satori-token') },
    matrix: { homeserver_url: 'http://127.0.0.1:9', user_id: '@canary:hs.test', access_token: secret('matrix-token') },
    qqofficial: { appid: '102000001', secret: secret('qq-secret'), token: secret('qq-token') },
  };
  const runners = {
    'dify-service-api': { 'base-url': 'http://127.0.0.1:9/v1', 'api-key': secret('dify') },
    'n8n-service-api': { 'webhook-url': 'http://127.0.0.1:9/hook', 'auth-type': 'header', 'basic-username': 'u', 'basic-password': secret('n8n-password'), 'jwt-secret': secret('n8n-jwt'), 'header-name': 'X-Key', 'header-value': secret('n8n-header') },
    'coze-api': { 'api-key': secret('coze'), 'bot-id': '7' },
    'langflow-api': { 'api-key': secret('langflow'), 'flow-id': 'f' },
    'dashscope-app-api': { 'api-key': secret('dashscope'), 'app-id': 'a' },
    'weknora-api': { 'api-key': secret('weknora') },
    'deerflow-api': { 'api-key': secret('deerflow'), 'auth-header': `Bearer ${secret('deerflow-header')}` },
    'tbox-app-api': { 'api-key': secret('tbox'), 'app-id': 'a' },
  };
  const pipelineConfig = { ai: { runner: { runner: 'n8n-service-api' }, 'local-agent': { model: { primary: 'fake', fallbacks: [] } }, ...runners } };
  const mcpConfig = { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${secret('mcp-header')}`, 'X-Api-Key': secret('mcp-api-key') }, env: { ANY_NAME: secret('mcp-env') } };

  before(async () => {
    sys = await startTestSystem({ startServices: false });
    admin = await startAdmin(sys);
    prisma = createPrismaClient(sys.db.url);
    adminApi = new AdminClient(admin.url);
    await adminApi.login();
    const viewerToken = await adminApi.call('POST', '/tokens', { name: `viewer-${tag}`, role: 'viewer' });
    assert.equal(viewerToken.status, 201);
    viewerApi = new AdminClient(admin.url, viewerToken.body.secret);
  });
  after(async () => {
    await prisma?.$disconnect();
    await sys?.stop();
  });

  test('the secrets are written, each answer masks them, and masked values sent back keep them', async () => {
    const pipeline = await asAdmin('POST', '/pipelines', { id: `p-${tag}`, config: pipelineConfig });
    assert.equal(pipeline.status, 201, JSON.stringify(pipeline.body));
    assert.equal(pipeline.body.config.ai['n8n-service-api']['header-name'], 'X-Key', 'plain settings come back as they are');
    const patched = await asAdmin('PATCH', `/pipelines/p-${tag}`, { name: 'renamed', config: pipeline.body.config, version: 1 });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal((await asAdmin('POST', `/pipelines/p-${tag}/copy`, { id: `p-${tag}-copy` })).status, 201);
    const validated = await record('viewer', viewerApi, 'POST', '/pipelines/validate', { config: pipelineConfig });
    assert.equal(validated.status, 200, JSON.stringify(validated.body));
    assert.equal(validated.body.valid, true, JSON.stringify(validated.body));

    for (const [adapter, adapterConfig] of Object.entries(bots)) {
      const bot = await asAdmin('POST', '/bots', { name: `${adapter} ${tag}`, adapter, pipelineId: `p-${tag}`, adapterConfig, enabled: false });
      assert.equal(bot.status, 201, `${adapter}: ${JSON.stringify(bot.body)}`);
      const again = await asAdmin('PATCH', `/bots/${bot.body.id}`, { adapterConfig: bot.body.adapterConfig, version: 1 });
      assert.equal(again.status, 200, `${adapter}: ${JSON.stringify(again.body)}`);
      const row = await prisma.bot.findUniqueOrThrow({ where: { id: bot.body.id } });
      assert.deepEqual(row.adapterConfig, adapterConfig, `${adapter}: the stored secrets survive a masked round trip`);
    }

    const model = await asAdmin('POST', '/models', { id: `m-${tag}`, baseUrl: sys.llm.url, model: 'fake-model', apiKey: secret('model-key') });
    assert.equal(model.status, 201, JSON.stringify(model.body));
    const mcp = await asAdmin('POST', '/mcp-servers', { id: `mcp-${tag}`, transport: 'http', config: mcpConfig, enabled: false });
    assert.equal(mcp.status, 201, JSON.stringify(mcp.body));
    assert.equal((await asAdmin('PATCH', `/mcp-servers/mcp-${tag}`, { config: mcp.body.config, version: 1 })).status, 200);

    const stored = await prisma.pipeline.findUniqueOrThrow({ where: { id: `p-${tag}` } });
    for (const [runner, settings] of Object.entries(runners)) {
      const kept = (stored.config as { ai: Record<string, Record<string, unknown>> }).ai[runner];
      for (const [key, value] of Object.entries(settings)) assert.equal(kept[key], value, `${runner}.${key} kept through the masked round trip`);
    }
    assert.deepEqual((await prisma.mcpServer.findUniqueOrThrow({ where: { id: `mcp-${tag}` } })).config, mcpConfig);
  });

  test('no answer to an admin or a viewer, on any read route of the router, holds a canary', async () => {
    const table = AdminApi.RouteTable.parse((await asAdmin('GET', '/routes')).body).items;
    const base = AdminApi.ADMIN_API_BASE;
    const reads = table.filter((r) => r.method === 'GET' && r.path.startsWith(`${base}/`)).map((r) => r.path.slice(base.length));
    const lists = reads.filter((p) => !p.includes(':'));
    for (const [who, client] of [['admin', adminApi], ['viewer', viewerApi]] as const) {
      for (const list of lists) {
        const answer = await record(who, client, 'GET', list);
        // Each item a list names is read on its own too, through the route that reads one.
        const one = reads.find((p) => p.startsWith(`${list}/:`) && p.split('/').length === list.split('/').length + 1);
        const items: Array<{ id?: unknown }> = Array.isArray(answer.body?.items) ? answer.body.items : [];
        if (one) for (const item of items) if (typeof item.id === 'string') await record(who, client, 'GET', one.replace(/:[A-Za-z]+$/, encodeURIComponent(item.id)));
      }
    }
    const docs = await fetch(`${admin.url}/api/docs-json`);
    answers.push({ who: 'anyone', what: 'GET /api/docs-json', answer: { status: docs.status, body: await docs.text(), headers: docs.headers } });

    const read = new Set(answers.map((a) => `${a.who} ${a.what.split(' ')[1].replace(new RegExp(`/[^/]*${tag}[^/]*|/[0-9a-f-]{36}$`), '/:id')}`));
    for (const expected of ['admin /bots', 'viewer /bots/:id', 'viewer /pipelines/:id', 'admin /audit', 'viewer /mcp-servers/:id', 'viewer /models/:id']) assert.ok(read.has(expected), `${expected} was read (${[...read].join(', ')})`);
    for (const { who, what, answer } of answers) {
      const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? '');
      assert.ok(!text.toLowerCase().includes(canary.toLowerCase()), `${who} ${what} answered a secret: ${text.slice(0, 2000)}`);
    }
    assert.ok(answers.length > 40, `only ${answers.length} answers`);
    assert.ok(!admin.logs.join('\n').includes(canary), 'no secret is logged');
    // The canary is there to be found: the secrets are stored.
    assert.ok(JSON.stringify(await prisma.bot.findMany()).includes(canary));
  });
});
