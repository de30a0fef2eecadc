import { SpanKind } from '@opentelemetry/api';
import type { RunnerKind } from '@conveyor/contracts';
import { inSpan } from '@conveyor/telemetry';
import type { ExternalInput, ExternalResult } from './common.js';
import { cozeConfig, runCoze } from './coze.js';
import { dashscopeConfig, runDashscope } from './dashscope.js';
import { deerflowConfig, runDeerflow } from './deerflow.js';
import { difyConfig, runDify } from './dify.js';
import { langflowConfig, runLangflow } from './langflow.js';
import { n8nConfig, runN8n } from './n8n.js';
import { runTbox, tboxConfig } from './tbox.js';
import { runWeknora, weknoraConfig } from './weknora.js';
import type { RunnerSettings, SecretResolver } from './settings.js';
import { contextSpanAttributes, serverAttributes, type GenAiCallContext } from '../genai-semconv.js';

export type ExternalRunnerKind = Exclude<RunnerKind, 'local-agent'>;

/** One entry per external runner: its pipeline settings (`ai.<runner>`) read into its config, then the call. */
const RUNNERS: Record<ExternalRunnerKind, (s: RunnerSettings, secret: SecretResolver, input: ExternalInput) => Promise<ExternalResult>> = {
  'dify-service-api': (s, secret, input) => runDify(difyConfig(s, secret), input),
  'n8n-service-api': (s, secret, input) => runN8n(n8nConfig(s, secret), input),
  'coze-api': (s, secret, input) => runCoze(cozeConfig(s, secret), input),
  'langflow-api': (s, secret, input) => runLangflow(langflowConfig(s, secret), input),
  'dashscope-app-api': (s, secret, input) => runDashscope(dashscopeConfig(s, secret), input),
  'weknora-api': (s, secret, input) => runWeknora(weknoraConfig(s, secret), input),
  'deerflow-api': (s, secret, input) => runDeerflow(deerflowConfig(s, secret), input),
  'tbox-app-api': (s, secret, input) => runTbox(tboxConfig(s, secret), input),
};

/**
 * The settings of each runner (`ai.<runner>.<key>`) that hold secrets: exactly the ones its config
 * reads through the SecretResolver. The admin API masks them in every pipeline it returns.
 */
export const RUNNER_SECRET_SETTINGS: Readonly<Record<ExternalRunnerKind, readonly string[]>> = {
  'dify-service-api': ['api-key'],
  'n8n-service-api': ['basic-password', 'jwt-secret', 'header-value'],
  'coze-api': ['api-key'],
  'langflow-api': ['api-key'],
  'dashscope-app-api': ['api-key'],
  'weknora-api': ['api-key'],
  'deerflow-api': ['api-key', 'auth-header'],
  'tbox-app-api': ['api-key'],
};

export function isExternalRunner(kind: RunnerKind): kind is ExternalRunnerKind {
  return kind !== 'local-agent';
}

/** The service each runner talks to, as `gen_ai.provider.name` (the conventions allow names of their own). */
const RUNNER_PROVIDERS: Readonly<Record<ExternalRunnerKind, string>> = {
  'dify-service-api': 'dify',
  'n8n-service-api': 'n8n',
  'coze-api': 'coze',
  'langflow-api': 'langflow',
  'dashscope-app-api': 'dashscope',
  'weknora-api': 'weknora',
  'deerflow-api': 'deerflow',
  'tbox-app-api': 'tbox',
};

/** The setting holding where each runner's service is (the defaults are the runners' own). */
const RUNNER_ADDRESS_SETTINGS = ['base-url', 'api-base', 'webhook-url'] as const;

/**
 * Runs one external runner in an `invoke_agent <runner>` CLIENT span (the remote call's HTTP span is
 * its child), which records whether the remote conversation continued and fails with the error. It
 * carries the provider, the service's address when the settings name one, and the session, user and
 * conversation the run serves (identifiers only), as the local agent's spans do.
 */
export function runExternalRunner(kind: ExternalRunnerKind, settings: RunnerSettings, secret: SecretResolver, input: ExternalInput, telemetry?: GenAiCallContext): Promise<ExternalResult> {
  const address = RUNNER_ADDRESS_SETTINGS.map((k) => settings[k]).find((v): v is string => typeof v === 'string' && v.trim() !== '');
  const attributes = {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': kind,
    'gen_ai.provider.name': RUNNER_PROVIDERS[kind],
    ...(address ? serverAttributes(address.trim()) : {}),
    ...contextSpanAttributes(telemetry),
    'conveyor.runner': kind,
    'conveyor.external.conversation_continued': input.conversationId !== undefined,
  };
  return inSpan(`invoke_agent ${kind}`, attributes, () => RUNNERS[kind](settings, secret, input), SpanKind.CLIENT);
}
