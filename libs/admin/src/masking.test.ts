import { test } from 'node:test';
import assert from 'node:assert/strict';
import { botSecretFields, isSecretKey, maskBotConfig, maskMcpConfig, maskPipelineConfig, maskSecrets, unmaskSecrets } from './masking.js';
import { AdminApiError } from './errors.js';

const stored = { inbound_secret: 'a-long-inbound-secret-1234', callback_url: 'https://example.test/cb', token: 'short', headers: { Authorization: 'Bearer abcdefghijklmnopqrstuvwxyz' }, api_key: 'env:MY_KEY' };

test('secret-looking keys are masked at any depth; references and other values are not', () => {
  assert.deepEqual(maskSecrets(stored), {
    inbound_secret: '••••1234',
    callback_url: 'https://example.test/cb',
    token: '••••',
    headers: { Authorization: '••••wxyz' },
    api_key: 'env:MY_KEY',
  });
});

test('a masked value sent back keeps the stored secret; a new value replaces it', () => {
  const incoming = { ...(maskSecrets(stored) as Record<string, unknown>), token: 'a-new-token' };
  assert.deepEqual(unmaskSecrets(incoming, stored, 'body.adapterConfig'), { ...stored, token: 'a-new-token' });
});

test('a masked value where nothing is stored is refused, naming the field', () => {
  assert.throws(() => unmaskSecrets({ webhook_secret: '••••' }, {}, 'body.adapterConfig'), (err: AdminApiError) => err.details.field === 'body.adapterConfig.webhook_secret');
});

test('each platform\'s secrets are the fields its schema marks, and every declared field with a secret-looking name is marked', async () => {
  const { platforms } = await import('@conveyor/platforms');
  const marked = Object.fromEntries(platforms.configurableNames().map((name) => [name, [...(botSecretFields(name)?.secret ?? [])].sort()]));
  assert.deepEqual(marked, {
    dingtalk: ['client_secret'],
    discord: ['token'],
    'http-bot': ['inbound_secret', 'outbound_secret'],
    kook: ['token'],
    lark: ['app_secret', 'encrypt-key', 'verification-token'],
    line: ['channel_access_token', 'channel_secret'],
    matrix: ['access_token'],
    officialaccount: ['AppSecret', 'EncodingAESKey', 'token'],
    onebot: ['access-token'],
    qqofficial: ['secret', 'token'],
    satori: ['token'],
    slack: ['app_token', 'bot_token', 'signing_secret'],
    telegram: ['token', 'webhook_secret'],
    wecom: ['EncodingAESKey', 'contacts_secret', 'secret', 'token'],
    wecombot: ['EncodingAESKey', 'Secret', 'Token'],
    wecomcs: ['EncodingAESKey', 'secret', 'token'],
  });
  // Marking by schema never masks less than the name rule did (a flag named after signatures holds none).
  const flags = new Set(['http-bot.signature_required']);
  for (const name of platforms.configurableNames()) {
    const fields = botSecretFields(name)!;
    for (const key of fields.known) if (isSecretKey(key) && !flags.has(`${name}.${key}`)) assert.ok(fields.secret.has(key), `${name}.${key} looks secret but is not marked`);
  }
});

test('bot settings: marked secrets are masked whatever their name (Lark encrypt-key, WeCom EncodingAESKey); declared plain fields are kept; unknown keys fall back to their name', () => {
  const lark = maskBotConfig('lark', { app_id: 'cli_1', app_secret: 'lark-app-secret-0123456789', 'encrypt-key': 'lark-encrypt-key-0123456789', 'verification-token': 'vt', webhook_url: 'https://x.test/bots/1', extra_password: 'p' });
  assert.deepEqual(lark, { app_id: 'cli_1', app_secret: '••••6789', 'encrypt-key': '••••6789', 'verification-token': '••••', webhook_url: 'https://x.test/bots/1', extra_password: '••••' });
  const aesKey = 'A'.repeat(43);
  const wecom = maskBotConfig('wecom', { corpid: 'ww1', secret: 's', token: 't', EncodingAESKey: aesKey, api_base_url: 'https://qyapi.weixin.qq.com/cgi-bin' }) as Record<string, unknown>;
  assert.equal(wecom.EncodingAESKey, '••••AAAA');
  assert.equal(wecom.corpid, 'ww1');
  assert.equal(wecom.api_base_url, 'https://qyapi.weixin.qq.com/cgi-bin');
  assert.deepEqual(maskBotConfig('no-such-adapter', { EncodingAESKey: aesKey, name: 'x' }), { EncodingAESKey: '••••AAAA', name: 'x' });
});

test('pipeline configs: every external runner\'s secret settings are masked, other settings kept; the masked config round-trips', () => {
  const config = {
    ai: {
      runner: { runner: 'n8n-service-api' },
      'local-agent': { model: 'fake', prompt: [{ role: 'system', content: 'hi' }] },
      'n8n-service-api': { 'webhook-url': 'https://n8n.test/hook', 'auth-type': 'header', 'basic-password': 'n8n-basic-password-000', 'jwt-secret': 'n8n-jwt-secret-0000000', 'header-name': 'X-Key', 'header-value': 'n8n-header-value-00000', 'output-key': 'response' },
      'dify-service-api': { 'base-url': 'https://dify.test/v1', 'api-key': 'dify-api-key-000000000' },
      'deerflow-api': { 'auth-header': 'Bearer deerflow-0000000', 'api-key': 'env:DEERFLOW_KEY' },
      'tbox-app-api': { 'api-key': 'tbox-api-key-000000000', 'app-id': 'a' },
      'future-runner': { 'api-key': 'future-api-key-0000000', 'model': 'm' },
    },
    output: { misc: { 'failure-hint': 'sorry' } },
  };
  const masked = maskPipelineConfig(config) as typeof config;
  const n8n = masked.ai['n8n-service-api'];
  assert.deepEqual([n8n['basic-password'], n8n['jwt-secret'], n8n['header-value']], ['••••-000', '••••0000', '••••0000']);
  assert.deepEqual([n8n['webhook-url'], n8n['auth-type'], n8n['header-name'], n8n['output-key']], ['https://n8n.test/hook', 'header', 'X-Key', 'response']);
  assert.equal(masked.ai['dify-service-api']['api-key'], '••••0000');
  assert.equal(masked.ai['dify-service-api']['base-url'], 'https://dify.test/v1');
  assert.equal(masked.ai['deerflow-api']['auth-header'], '••••0000');
  assert.equal(masked.ai['deerflow-api']['api-key'], 'env:DEERFLOW_KEY', 'a reference is not a secret');
  assert.equal(masked.ai['tbox-app-api']['api-key'], '••••0000');
  assert.equal(masked.ai['tbox-app-api']['app-id'], 'a');
  assert.equal(masked.ai['future-runner']['api-key'], '••••0000', 'an undeclared runner falls back to names');
  assert.deepEqual(masked.ai['local-agent'], config.ai['local-agent']);
  assert.ok(!JSON.stringify(masked).match(/n8n-basic|n8n-jwt|n8n-header|dify-api|deerflow-0|tbox-api|future-api/));
  assert.deepEqual(unmaskSecrets(masked, config, 'body.config'), config);
});

test('MCP settings: every environment value of a stdio server is masked; headers and the rest by name', () => {
  const masked = maskMcpConfig({ command: 'npx', args: ['server'], env: { DATABASE_URL: 'postgres://u:hunter2hunter2@db/x', NODE_ENV: 'production' }, headers: { Authorization: 'Bearer abcdefghijklmnopqrstuvwxyz', Accept: 'application/json' } });
  assert.deepEqual(masked, { command: 'npx', args: ['server'], env: { DATABASE_URL: '••••db/x', NODE_ENV: '••••' }, headers: { Authorization: '••••wxyz', Accept: 'application/json' } });
});
