import fc from 'fast-check';
import { stringify as yamlStringify } from 'yaml';
import { ConfigFileError, parseConfigText } from '@conveyor/config';
import { parsePipelineConfig } from '@conveyor/pipeline';
import { anyTypedValue, awkwardChar, hostileText, mutate, paths } from './arbitraries.js';
import { emptyReport, preview, type CategoryReport } from './report.js';

/** A conveyor.yaml the loader takes, to mutate from. */
const VALID_CONFIG = {
  models: [{ id: 'fake', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'CONVEYOR_KEY_FUZZ_LLM', model: 'fake-model', abilities: ['func_call'], timeoutMs: 30_000 }],
  pipelines: [{
    id: 'default',
    stages: ['GroupRespondRuleCheckStage', 'MessageProcessor', 'SendResponseBackStage'],
    config: {
      trigger: { 'group-respond-rules': { at: true, prefix: ['ai'], regexp: ['^hey'], random: 0.5 } },
      safety: { 'rate-limit': { 'window-length': 60, limitation: 60, strategy: 'drop' } },
      ai: { runner: { runner: 'local-agent' }, 'local-agent': { model: { primary: 'fake', fallbacks: [] }, prompt: [{ role: 'system', content: 'be brief' }] } },
      output: { misc: { 'exception-handling': 'show-hint', 'failure-hint': 'Request failed.' } },
    },
  }],
  bots: [{ id: '6f1c1d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f', adapter: 'http-bot', pipeline: 'default', config: { inbound_secret: '${FUZZ_SECRET}', callback_url: 'http://127.0.0.1:9/cb' }, enabled: 'true' }],
  mcpServers: [{ id: 'tools', transport: 'stdio', config: { command: 'node', args: ['x.js'] }, enabled: true }],
};

export type ConfigInput =
  | { kind: 'file-mutation'; path: (string | number)[]; replacement: unknown; yaml: boolean }
  | { kind: 'file-text'; text: string }
  | { kind: 'pipeline'; path: (string | number)[]; replacement: unknown };

const FILE_PATHS = paths(VALID_CONFIG);
const PIPELINE_PATHS = paths(VALID_CONFIG.pipelines[0].config);

/** A path of the valid config, sometimes with a new key under it (a typo, an unknown setting). */
const pathIn = (all: (string | number)[][]) =>
  fc.tuple(fc.nat(), fc.option(fc.oneof(fc.constantFrom('typo', 'secret', '__proto__', 'constructor'), hostileText(8)), { nil: undefined, freq: 5 }))
    .map(([i, extra]) => (extra === undefined ? all[i % all.length] : [...all[i % all.length], extra]));

const replacement: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: anyTypedValue },
  { weight: 1, arbitrary: fc.constantFrom('${MISSING_VAR}', '${FUZZ_SECRET:-fallback}', '${}', '${1BAD}', '$${ESCAPED}', '${FUZZ_SECRET', 'coze-api', '(a+)+$', '[', '-1', '1e999', 'NaN', 'Infinity', '0x10', ' 5 ') },
);

const yamlText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    '---\n...',
    'models: [',
    'models:\n\t- id: x',
    'a: &a [*a, *a]\nb: *a',
    'x: &x [1,1,1,1,1,1,1,1,1,1]\ny: &y [*x,*x,*x,*x,*x,*x,*x,*x,*x,*x]\nz: &z [*y,*y,*y,*y,*y,*y,*y,*y,*y,*y]\nw: [*z,*z,*z,*z,*z,*z,*z,*z,*z,*z]',
    'models: []\nmodels: []',
    '!!binary aGVsbG8=',
    '? complex\n: value',
    '<<: {models: []}',
    'models: !!js/function "function(){}"',
    'models: 1\n---\nbots: 2',
    '%YAML 9.9\n---\nmodels: []',
  ),
  fc.array(fc.oneof(fc.constantFrom('models:', 'pipelines:', 'bots:', '- ', 'id: ', '  ', '\n', ': ', '[', ']', '{', '}', '&a ', '*a', '!!str ', '#', '"', "'", '|', '>'), hostileText(6), awkwardChar), { maxLength: 30 }).map((parts) => parts.join('')),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.integer({ min: 10, max: 5_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
);

export const configInput: fc.Arbitrary<ConfigInput> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('file-mutation' as const), path: pathIn(FILE_PATHS), replacement, yaml: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('file-text' as const), text: yamlText }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('pipeline' as const), path: pathIn(PIPELINE_PATHS), replacement }) },
);

const ENV = { FUZZ_SECRET: 's3cret', CONVEYOR_KEY_FUZZ_LLM: 'k' };
const FILE = 'fuzz.yaml';

function fileText(input: Extract<ConfigInput, { kind: 'file-mutation' }>): string | undefined {
  const value = mutate(VALID_CONFIG, input.path, input.replacement);
  if (!input.yaml) return JSON.stringify(value);
  try {
    return yamlStringify(value);
  } catch {
    // The YAML writer refuses some values (lone surrogates); the JSON spelling is YAML too.
    return JSON.stringify(value);
  }
}

/**
 * The config loader and the pipeline config validator are pure: every input either loads or fails
 * with a ConfigFileError (issues with a message, and a key path when the problem is inside the file);
 * nothing else may be thrown. What the loader accepts, the orchestrator's own check accepts too.
 */
export function fuzzConfig(inputs: ConfigInput[]): CategoryReport {
  const report = emptyReport('config');
  for (const input of inputs) {
    report.inputs++;
    const fail = (problem: string) => report.failures.push({ problem, input: preview(input) });
    if (input.kind === 'pipeline') {
      const stored = mutate(VALID_CONFIG.pipelines[0].config, input.path, input.replacement);
      try {
        const parsed = parsePipelineConfig(stored);
        if (parsed.ok) report.handled++;
        else {
          report.status4xx++;
          if (parsed.issues.some((i) => !i.reason)) fail('a pipeline config issue without a reason');
          if (input.path.length > 0 && parsed.issues.every((i) => i.path === '')) fail('a pipeline config issue names no key path');
        }
      } catch (err) {
        fail(`parsePipelineConfig threw ${(err as Error).name}: ${(err as Error).message.slice(0, 200)}`);
      }
      continue;
    }
    const text = input.kind === 'file-text' ? input.text : fileText(input);
    if (text === undefined) continue;
    try {
      const config = parseConfigText(text, FILE, { env: ENV });
      report.handled++;
      config.pipelines.forEach((p, i) => {
        const parsed = parsePipelineConfig(p.config);
        if (!parsed.ok) fail(`the loader accepted pipelines[${i}] but the orchestrator's check refuses it: ${parsed.issues.map((x) => `${x.path}: ${x.reason}`).join('; ').slice(0, 200)}`);
      });
    } catch (err) {
      if (!(err instanceof ConfigFileError)) {
        fail(`parseConfigText threw ${(err as Error)?.name}: ${String((err as Error)?.message).slice(0, 200)}`);
        continue;
      }
      report.status4xx++;
      if (err.issues.length === 0 || err.issues.some((i) => !i.message)) fail('a ConfigFileError without issues or with an empty message');
      else if (!err.message.startsWith(`${FILE}: `)) fail('a ConfigFileError that does not name the file');
      // An unknown key at the top level is reported on the file as a whole, naming the key in the message.
      else if (input.kind === 'file-mutation' && input.path.length > 0 && err.issues.every((i) => i.path === '') && !err.issues.some((i) => i.message.startsWith('Unrecognized key'))) fail(`a config error names no key path: ${err.message.slice(0, 200)}`);
    }
  }
  return report;
}
