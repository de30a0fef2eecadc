import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cozeConfig } from './coze.js';
import { dashscopeConfig } from './dashscope.js';
import { deerflowConfig } from './deerflow.js';
import { difyConfig } from './dify.js';
import { langflowConfig } from './langflow.js';
import { n8nConfig } from './n8n.js';
import { tboxConfig } from './tbox.js';
import { weknoraConfig } from './weknora.js';
import { RUNNER_SECRET_SETTINGS, type ExternalRunnerKind } from './registry.js';
import type { RunnerSettings, SecretResolver } from './settings.js';

const READERS: Record<ExternalRunnerKind, (s: RunnerSettings, secret: SecretResolver) => unknown> = {
  'dify-service-api': difyConfig,
  'n8n-service-api': n8nConfig,
  'coze-api': cozeConfig,
  'langflow-api': langflowConfig,
  'dashscope-app-api': dashscopeConfig,
  'weknora-api': weknoraConfig,
  'deerflow-api': deerflowConfig,
  'tbox-app-api': tboxConfig,
};

/** The few settings a reader checks the form of; every other key reads as `value of <key>`. */
const FORMED: RunnerSettings = { 'app-type': 'agent', 'api-base': 'http://127.0.0.1:1', 'base-url': 'http://127.0.0.1:1', tweaks: '{}' };

test('each runner\'s declared secret settings are exactly the ones its reader resolves as secrets', () => {
  assert.deepEqual(Object.keys(READERS).sort(), Object.keys(RUNNER_SECRET_SETTINGS).sort());
  for (const [kind, read] of Object.entries(READERS) as Array<[ExternalRunnerKind, (typeof READERS)[ExternalRunnerKind]]>) {
    // Every key the reader asks for answers a value naming the key, so a resolved value names its key.
    const settings = new Proxy<RunnerSettings>({}, { get: (_t, key) => (typeof key === 'string' ? FORMED[key] ?? `value of ${key}` : undefined) });
    const resolved: string[] = [];
    read(settings, (v) => {
      resolved.push(String(v).replace(/^value of /, ''));
      return String(v);
    });
    assert.deepEqual(resolved.sort(), [...RUNNER_SECRET_SETTINGS[kind]].sort(), kind);
  }
});
