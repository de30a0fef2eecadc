import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateBotSettings, validatePipeline } from './validation.js';

const refs = { modelIds: new Set(['gpt']), mcpServerIds: new Set(['tools']) };

test('a partial LangBot config is completed with the defaults and passes', () => {
  const checked = validatePipeline({ config: { ai: { 'local-agent': { model: 'gpt' } } } }, refs);
  assert.deepEqual(checked.issues, []);
  assert.equal(checked.config.trigger['access-control'] !== undefined, true);
});

test('issues name the key path as the config loader does: config values, stages, models and MCP servers', () => {
  const checked = validatePipeline(
    { config: { safety: { 'rate-limit': { strategy: 'queue' } }, ai: { 'local-agent': { model: { primary: 'gpt', fallbacks: ['nope'] } } } }, stages: ['PreProcessor', 'NoSuchStage'], mcpServers: ['tools', 'gone'] },
    refs,
  );
  assert.deepEqual(checked.issues.map((i) => i.path), ['stages[1]', 'config.safety.rate-limit.strategy', 'extensionsPreferences.mcp_servers[1]']);
  const models = validatePipeline({ config: { ai: { 'local-agent': { model: { primary: 'gpt', fallbacks: ['nope'] } } } } }, refs);
  assert.deepEqual(models.issues, [{ path: 'config.ai.local-agent.model.fallbacks[0]', message: 'unknown model "nope"' }]);
});

test('unknown references say where the writer looked, when it says so', () => {
  const checked = validatePipeline(
    { config: { ai: { 'local-agent': { model: 'gone' } } }, mcpServers: ['nope'] },
    { ...refs, lookedIn: { models: 'not in models, nor in the database', mcpServers: 'not in mcpServers, nor in the database' } },
  );
  assert.deepEqual(checked.issues.map((i) => i.message), ['unknown model "gone" (not in models, nor in the database)', 'unknown MCP server "nope" (not in mcpServers, nor in the database)']);
});

test('a bot\'s settings are read by its platform\'s schema: each refused key with the reason', () => {
  assert.deepEqual(validateBotSettings('http-bot', { inbound_secret: 's' }), []);
  const telegram = validateBotSettings('telegram', { webhook_secret: 'w', api_base_url: 'not a url' });
  assert.deepEqual(telegram.map((i) => [i.on, i.path.join('.')]), [['settings', 'token'], ['settings', 'api_base_url']]);
  assert.equal(telegram[0].message, 'is required');
  const open = validateBotSettings('http-bot', { inbound_secret: '' });
  assert.deepEqual(open.map((i) => i.path), [['inbound_secret']]);
  assert.match(open[0].message, /must be set while signature_required is on/);
});

test('a bot whose adapter no configurable platform has is refused on the adapter, naming the choices', () => {
  for (const adapter of ['carrier-pigeon', 'webchat']) {
    const [issue, ...more] = validateBotSettings(adapter, {});
    assert.deepEqual(more, []);
    assert.equal(issue.on, 'adapter');
    assert.match(issue.message, new RegExp(`no platform named ${adapter}; one of .*http-bot`));
  }
});
