import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { DEFAULT_PIPELINE_STAGES } from '@conveyor/pipeline';
import { findMigrationsDir } from '@conveyor/persistence';
import { ConfigFileError, formatKeyPath } from './errors.js';
import { loadConfigFile, parseConfigText } from './load.js';
import { validateBotSettings } from './validation.js';

const exampleFile = path.join(path.dirname(path.dirname(findMigrationsDir())), 'conveyor.example.yaml');
const FILE = '/etc/conveyor/test.yaml';

/** Asserts that parsing throws a ConfigFileError naming the file, the key path and the problem. */
function assertConfigError(text: string, keyPath: string, problem: RegExp, options: Parameters<typeof parseConfigText>[2] = { env: {} }): ConfigFileError {
  try {
    parseConfigText(text, FILE, options);
  } catch (err) {
    assert.ok(err instanceof ConfigFileError, `expected ConfigFileError, got ${String(err)}`);
    assert.equal(err.file, FILE);
    const line = err.message.split('\n').find((l) => l.startsWith(`${FILE}: ${keyPath}${keyPath ? ': ' : ''}`));
    assert.ok(line, `no issue for ${JSON.stringify(keyPath)} in:\n${err.message}`);
    assert.match(line, problem);
    return err;
  }
  assert.fail('expected a ConfigFileError');
}

const minimal = (extra = '') => `
models:
  - id: m1
    baseUrl: http://llm/v1
    model: gpt
pipelines:
  - id: p1
    config:
      ai: {local-agent: {model: {primary: m1}}}
bots:
  - id: 5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34
    adapter: http-bot
    pipeline: p1
    config: {inbound_secret: s}
${extra}`;

test('the example file loads with defaults applied', async () => {
  const config = await loadConfigFile(exampleFile, { env: {} });
  assert.equal(config.file, exampleFile);
  assert.deepEqual(config.models, [{
    id: 'fake', name: 'Fake LLM', provider: 'openai', baseUrl: 'http://127.0.0.1:8090/v1', apiKeyRef: 'env:LLM_API_KEY',
    modelId: 'gpt-4o-mini', abilities: ['func_call'], extraArgs: {}, timeoutMs: 120000, inputPricePerMTok: null, outputPricePerMTok: null,
  }]);
  const [pipeline] = config.pipelines;
  assert.equal(pipeline.id, 'default');
  assert.deepEqual(pipeline.stages, [...DEFAULT_PIPELINE_STAGES]);
  const c = pipeline.config as any;
  assert.deepEqual(c.ai['local-agent'].model, { primary: 'fake', fallbacks: [] });
  assert.equal(c.ai['local-agent']['max-round'], 10);
  assert.deepEqual(c.trigger['group-respond-rules'].prefix, ['ai']);
  assert.equal(c.output.misc['failure-hint'], 'Request failed.');
  assert.deepEqual(config.bots, [{
    id: '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34', name: 'HTTP bot', adapter: 'http-bot', pipelineId: 'default', enabled: true,
    adapterConfig: { inbound_secret: 'dev-inbound-secret', callback_url: 'http://127.0.0.1:8091/callback' },
  }]);
  assert.deepEqual(config.mcpServers, []);
});

test('environment variables are interpolated in every string value', async () => {
  const config = await loadConfigFile(exampleFile, {
    env: { LLM_BASE_URL: 'https://api.example.com/v1', HTTP_BOT_INBOUND_SECRET: 's3cret', HTTP_BOT_CALLBACK_URL: '' },
  });
  assert.equal(config.models[0].baseUrl, 'https://api.example.com/v1');
  assert.equal(config.bots[0].adapterConfig.inbound_secret, 's3cret');
  // `:-` also applies to a variable that is set but empty.
  assert.equal(config.bots[0].adapterConfig.callback_url, 'http://127.0.0.1:8091/callback');

  const inner = parseConfigText(minimal(`mcpServers:
  - id: s
    transport: stdio
    config: {command: "\${BIN}", args: ["--dir=\${DIR:-/tmp}/x", "\${A}\${B}"]}`), FILE, { env: { BIN: '/bin/mcp', A: 'a', B: '' } });
  assert.deepEqual(inner.mcpServers[0].config, { command: '/bin/mcp', args: ['--dir=/tmp/x', 'a'] });
});

test('defaults of optional keys, and string spellings of numbers and booleans', () => {
  const config = parseConfigText(minimal().replace('    model: gpt', '    model: gpt\n    timeoutMs: "${T:-5000}"') + `mcpServers:
  - {id: s, transport: sse, enabled: "\${ON:-false}"}`, FILE, { env: {} });
  assert.equal(config.models[0].name, 'm1');
  assert.equal(config.models[0].apiKeyRef, '');
  assert.deepEqual(config.models[0].abilities, []);
  assert.equal(config.models[0].timeoutMs, 5000);
  assert.equal(config.pipelines[0].name, 'p1');
  assert.equal(config.bots[0].enabled, true);
  assert.deepEqual(config.bots[0].adapterConfig, { inbound_secret: 's' });
  assert.deepEqual(config.mcpServers[0], { id: 's', name: 's', transport: 'sse', config: {}, enabled: false });
});

test('YAML syntax errors name the file and the position', () => {
  const err = assertConfigError('models:\n  - id: [unclosed\n', '', /YAML syntax error at line \d+, column \d+/);
  assert.equal(err.issues[0].path, '');
});

test('a missing environment variable names the key path', () => {
  assertConfigError(minimal().replace('config: {inbound_secret: s}', 'config: {inbound_secret: s, outbound_secret: "${OUT_SECRET}"}'),
    'bots[0].config.outbound_secret', /environment variable OUT_SECRET is not set/);
  assertConfigError(minimal().replace('model: gpt', 'model: "${1BAD}"'), 'models[0].model', /malformed variable reference \$\{1BAD\}/);
  assertConfigError(minimal().replace('model: gpt', 'model: "${OPEN"'), 'models[0].model', /unterminated/);
});

test('schema errors name the key path', () => {
  assertConfigError(minimal().replace('    model: gpt\n', ''), 'models[0].model', /is required/);
  assertConfigError(minimal().replace('5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34', 'not-a-uuid'), 'bots[0].id', /UUID/i);
  assertConfigError(minimal().replace('model: gpt', 'model: gpt\n    apiKey: sk-live'), 'models[0]', /Unrecognized key: "apiKey"/);
  assertConfigError(minimal().replace('http://llm/v1', 'ftp://llm'), 'models[0].baseUrl', /http:\/\/ or https:\/\//);
  assertConfigError(minimal().replace('adapter: http-bot', 'adapter: carrier-pigeon'), 'bots[0].adapter', /http-bot/);
  assertConfigError(minimal().replace('model: gpt', 'model: gpt\n    abilities: [func_call, telepathy]'), 'models[0].abilities[1]', /func_call/);
  assertConfigError(minimal().replace('  - id: p1\n', '  - id: p1\n    stages: [PreProcessor, Bogus]\n'), 'pipelines[0].stages[1]', /MessageProcessor/);
  assertConfigError(minimal('colour: blue'), '', /Unrecognized key: "colour"/);
  assertConfigError('- just\n- a list\n', '', /expected object/);
  assertConfigError('\n', '', /the file is empty/);
});

test('a bot naming a pipeline that is neither in the file nor known is an error', () => {
  assertConfigError(minimal().replace('pipeline: p1', 'pipeline: nope'), 'bots[0].pipeline', /unknown pipeline "nope"/);
  const config = parseConfigText(minimal().replace('pipeline: p1', 'pipeline: in-db'), FILE, { env: {}, knownPipelineIds: ['in-db'] });
  assert.equal(config.bots[0].pipelineId, 'in-db');
});

test('a pipeline naming an unknown model is an error, for primary, fallbacks and the legacy string', () => {
  assertConfigError(minimal().replace('{primary: m1}', '{primary: m9}'), 'pipelines[0].config.ai.local-agent.model.primary', /unknown model "m9"/);
  assertConfigError(minimal().replace('{primary: m1}', '{primary: m1, fallbacks: [m1, m8]}'), 'pipelines[0].config.ai.local-agent.model.fallbacks[1]', /unknown model "m8"/);
  assertConfigError(minimal().replace('{primary: m1}', 'm7'), 'pipelines[0].config.ai.local-agent.model', /unknown model "m7"/);
  assertConfigError(minimal().replace('{primary: m1}', '{primary: 3}'), 'pipelines[0].config.ai.local-agent.model', /must be a model id or/);
  assertConfigError(minimal().replace('ai: {local-agent: {model: {primary: m1}}}', 'ai: 5'), 'pipelines[0].config.ai', /expected object/);
  const known = parseConfigText(minimal().replace('{primary: m1}', '{primary: m1, fallbacks: [db-model]}'), FILE, { env: {}, knownModelIds: ['db-model'] });
  assert.deepEqual((known.pipelines[0].config as any).ai['local-agent'].model.fallbacks, ['db-model']);
  // An empty primary (LangBot's default) names no model.
  parseConfigText(minimal().replace('{primary: m1}', "{primary: ''}"), FILE, { env: {} });
});

test('an unknown runner is an error naming its key path and the runners there are', () => {
  assertConfigError(minimal().replace('ai: {local-agent:', 'ai: {runner: {runner: ollama-runner}, local-agent:'), 'pipelines[0].config.ai.runner.runner',
    /unknown runner "ollama-runner"; Conveyor runs local-agent, dify-service-api, n8n-service-api, coze-api, langflow-api, dashscope-app-api, weknora-api, deerflow-api, tbox-app-api/);
  const dify = parseConfigText(minimal().replace('ai: {local-agent:', 'ai: {runner: {runner: dify-service-api}, local-agent:'), FILE, { env: {} });
  assert.equal((dify.pipelines[0].config as any).ai.runner.runner, 'dify-service-api');
});

test('pipeline values are checked as the orchestrator checks them, with their key paths', () => {
  assertConfigError(minimal().replace('ai: {local-agent:', 'safety: {rate-limit: {limitation: lots}}\n      ai: {local-agent:'), 'pipelines[0].config.safety.rate-limit.limitation', /expected number/);
  assertConfigError(minimal().replace('ai: {local-agent:', 'output: {misc: {exception-handling: shout}}\n      ai: {local-agent:'), 'pipelines[0].config.output.misc.exception-handling', /show-hint/);
});

test('duplicate ids are errors', () => {
  assertConfigError(minimal().replace('pipelines:', '  - {id: m1, baseUrl: "http://x", model: y}\npipelines:'), 'models[1].id', /duplicate id "m1"/);
});

test('every issue of a file is reported at once', () => {
  const err = assertConfigError(minimal().replace('model: gpt', 'model: ""').replace('adapter: http-bot', 'adapter: x'), 'models[0].model', /.+/);
  assert.ok(err.issues.some((i) => i.path === 'bots[0].adapter'));
});

test('an unreadable file is a ConfigFileError naming it', async () => {
  await assert.rejects(loadConfigFile('/nonexistent/conveyor.yaml'), (err: unknown) => {
    assert.ok(err instanceof ConfigFileError);
    assert.match(err.message, /^\/nonexistent\/conveyor\.yaml: cannot read the file/);
    return true;
  });
});

test('a YAML alias inside its own anchor is an error naming the key path, not a stack overflow', () => {
  const text = 'models:\n  - id: m1\n    baseUrl: http://llm/v1\n    model: gpt\n    extraArgs: &loop { again: *loop }\n';
  assertConfigError(text, 'models[0].extraArgs.again', /alias refers to a node that contains it/);
  assertConfigError('a: &a [*a, *a]\nb: *a', 'a[0]', /alias refers to a node that contains it/);
});

test('aliases that expand past the alias count are a ConfigFileError', () => {
  const bomb = 'x: &x [1,1,1,1,1,1,1,1,1,1]\ny: &y [*x,*x,*x,*x,*x,*x,*x,*x,*x,*x]\nz: &z [*y,*y,*y,*y,*y,*y,*y,*y,*y,*y]\nw: [*z,*z,*z,*z,*z,*z,*z,*z,*z,*z]';
  assertConfigError(bomb, '', /YAML aliases expand too far/);
});

test('a pipeline binds MCP servers with LangBot\'s extensions_preferences keys; left out, the file does not decide enable_all_mcp_servers', () => {
  const servers = `mcpServers:
  - {id: fs, transport: stdio, config: {command: mcp-fs}}
  - {id: web, transport: http, config: {url: "http://mcp/"}}`;
  // Applying decides it: false for a new pipeline, the stored value for an existing one (apply.test.ts).
  assert.deepEqual(parseConfigText(minimal(servers), FILE, { env: {} }).pipelines[0].extensionsPreferences, { mcp_servers: [], enable_all_plugins: true, plugins: [] });
  const bound = minimal(servers).replace('  - id: p1\n', '  - id: p1\n    extensionsPreferences: {enable_all_mcp_servers: "false", mcp_servers: [fs, fs], enable_all_plugins: false, plugins: [me/kw, me/kw]}\n');
  assert.deepEqual(parseConfigText(bound, FILE, { env: {} }).pipelines[0].extensionsPreferences, { enable_all_mcp_servers: false, mcp_servers: ['fs'], enable_all_plugins: false, plugins: ['me/kw'] });
  assertConfigError(minimal(servers).replace('  - id: p1\n', '  - id: p1\n    extensionsPreferences: {plugins: [no-author]}\n'), 'pipelines[0].extensionsPreferences.plugins[0]', /author\/name/);
  assertConfigError(minimal(servers).replace('  - id: p1\n', '  - id: p1\n    extensionsPreferences: {enable_all_mcp_servers: false, mcp_servers: [fs, nope]}\n'),
    'pipelines[0].extensionsPreferences.mcp_servers[1]', /unknown MCP server "nope" \(not in mcpServers, nor in the database\)/);
  assert.doesNotThrow(() => parseConfigText(minimal().replace('  - id: p1\n', '  - id: p1\n    extensionsPreferences: {enable_all_mcp_servers: false, mcp_servers: [db-only]}\n'), FILE, { env: {}, knownMcpServerIds: ['db-only'] }));
  assertConfigError(minimal().replace('  - id: p1\n', '  - id: p1\n    extensionsPreferences: {enable_all_plugin: false}\n'), 'pipelines[0].extensionsPreferences', /enable_all_plugin/);
});

test('a bot whose platform refuses its settings is an error naming the setting: an HTTP-bot needs its inbound_secret', () => {
  assertConfigError(minimal().replace('config: {inbound_secret: s}', 'config: {inbound_secret: ""}'), 'bots[0].config.inbound_secret', /must be set while signature_required is on/);
  assertConfigError(minimal().replace('config: {inbound_secret: s}', 'config: {callback_url: "http://cb/x"}'), 'bots[0].config.inbound_secret', /must be set/);
  // `${SECRET:-}` with the variable unset is the empty key too.
  assertConfigError(minimal().replace('config: {inbound_secret: s}', 'config: {inbound_secret: "${SECRET:-}"}'), 'bots[0].config.inbound_secret', /must be set/);
  // Verification is off only by a deliberate false, not by a key left empty.
  assertConfigError(minimal().replace('config: {inbound_secret: s}', 'config: {signature_required: }'), 'bots[0].config.signature_required', /true or false/);
  const open = parseConfigText(minimal().replace('config: {inbound_secret: s}', 'config: {signature_required: false}'), FILE, { env: {} });
  assert.deepEqual(open.bots[0].adapterConfig, { signature_required: false });
});

test('a bot with bad adapter settings is refused as the admin API refuses it: the message names the bot, the key and the reason', () => {
  // A second bot in the file's bots list.
  const telegram = `  - id: 0b6a4d52-8f1e-4c3a-9d7b-2e5f6a7c8d90
    name: Support desk
    adapter: telegram
    pipeline: p1
    config: {webhook_secret: w, api_base_url: "not a url"}
`;
  const err = assertConfigError(minimal(telegram), 'bots[1].config.token', /^.*: is required \(telegram bot 0b6a4d52-8f1e-4c3a-9d7b-2e5f6a7c8d90 \("Support desk"\)\)$/);
  assertConfigError(minimal(telegram), 'bots[1].config.api_base_url', /Support desk/);
  // The same settings through the API fail on the same keys: one validator for both writers.
  assert.deepEqual(
    err.issues.filter((i) => i.path.startsWith('bots[1].')).map((i) => i.path),
    validateBotSettings('telegram', { webhook_secret: 'w', api_base_url: 'not a url' }).map((i) => formatKeyPath(['bots', 1, 'config', ...i.path])),
  );
  // A bot without a name is named by its id alone.
  assertConfigError(minimal().replace('config: {inbound_secret: s}', 'config: {inbound_secret: ""}'), 'bots[0].config.inbound_secret', /\(http-bot bot 5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34\)$/);
});

test('a model entry may carry its prices per 1M tokens', () => {
  const text = `models:\n  - id: m\n    name: M\n    baseUrl: http://127.0.0.1:1/v1\n    model: x\n    inputPricePerMTok: 0.15\n    outputPricePerMTok: "0.6"\n`;
  const config = parseConfigText(text, 'prices.yaml', { env: {} });
  assert.deepEqual([config.models[0]?.inputPricePerMTok, config.models[0]?.outputPricePerMTok], [0.15, 0.6]);
});

test('a model names its provider, or a preset that gives provider, base URL and abilities', () => {
  const text = `models:
  - id: ds
    preset: deepseek
    model: deepseek-chat
  - id: claude
    preset: anthropic
    model: claude-x
    abilities: [func_call]
    baseUrl: https://claude-proxy.example/
  - id: local
    provider: ollama
    baseUrl: http://127.0.0.1:11434
    model: qwen3
`;
  const [ds, claude, local] = parseConfigText(text, 'presets.yaml', { env: {} }).models;
  assert.deepEqual([ds.provider, ds.baseUrl, ds.abilities], ['openai', 'https://api.deepseek.com/v1', ['func_call']]);
  assert.deepEqual([claude.provider, claude.baseUrl, claude.abilities], ['anthropic', 'https://claude-proxy.example/', ['func_call']]);
  assert.deepEqual([local.provider, local.baseUrl, local.abilities], ['ollama', 'http://127.0.0.1:11434', []]);
  assertConfigError(minimal().replace('    baseUrl: http://llm/v1\n', ''), 'models[0].baseUrl', /is required \(or name a preset\)/);
  assertConfigError(minimal().replace('model: gpt', 'model: gpt\n    preset: nowhere'), 'models[0].preset', /unknown preset; one of openai, anthropic/);
  assertConfigError(minimal().replace('model: gpt', 'model: gpt\n    provider: bedrock'), 'models[0].provider', /openai/);
});

test("a pipeline's reasoning levels are LangBot's", () => {
  const config = parseConfigText(minimal().replace('model: {primary: m1}', 'model: {primary: m1, reasoning: {m1: high}}'), FILE, { env: {} });
  assert.deepEqual((config.pipelines[0].config as any).ai['local-agent'].model.reasoning, { m1: 'high' });
  assertConfigError(minimal().replace('model: {primary: m1}', 'model: {primary: m1, reasoning: {m1: turbo}}'), 'pipelines[0].config.ai.local-agent.model', /reasoning level "turbo"|must be a model id/);
});
