import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePipeline } from './pipeline-validation.js';

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
