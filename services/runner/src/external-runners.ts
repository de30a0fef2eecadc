import { redisKeys } from '@conveyor/contracts';
import { Inject, Injectable } from '@nestjs/common';
import { messageText, type RunRequest } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import {
  ExternalRunnerError, runCoze, runDashscope, runDify, runLangflow, runN8n,
  type AgentItem, type CozeConfig, type DashscopeConfig, type DifyConfig, type ExternalInput, type ExternalResult, type LangflowConfig, type N8nConfig,
} from '@conveyor/agent';
import type { RunnerKind } from '@conveyor/contracts';
import { resolveApiKey } from '@conveyor/persistence';

type Settings = Record<string, unknown>;
const str = (v: unknown, d = '') => (typeof v === 'string' ? v : v == null ? d : String(v));
const num = (v: unknown, d: number) => (Number.isFinite(Number(v)) && v !== '' && v != null ? Number(v) : d);
/** A secret may be written as `env:NAME` to keep it out of the pipeline JSON; otherwise it is the value. */
const secret = (v: unknown) => {
  const s = str(v);
  return s.startsWith('env:') ? (resolveApiKey(s) ?? '') : s;
};

/**
 * The external runners. Their settings (with secrets) are read from the pipeline row rather than
 * carried on the bus; the remote conversation id lives in Redis, shared by all replicas, keyed by
 * Conveyor's conversation (LangBot keeps it on the in-memory conversation).
 */
@Injectable()
export class ExternalRunners {
  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  async run(run: RunRequest, emit: (item: AgentItem) => Promise<void>, signal: AbortSignal): Promise<ExternalResult> {
    const kind = run.runner!;
    const pipeline = await this.infra.prisma.pipeline.findUnique({ where: { id: run.pipelineId } });
    if (!pipeline) throw new Error(`pipeline ${run.pipelineId} not found`);
    const ai = ((pipeline.config as Settings)?.ai ?? {}) as Settings;
    const settings = (ai[kind] ?? {}) as Settings;
    const key = redisKeys(this.infra.topology.prefix).externalConversation(kind, run.conversationId);
    const conversationId = (await this.infra.redis.get(key)) ?? undefined;
    const user = run.messages[run.messages.length - 1];
    const input: ExternalInput = {
      query: messageText(user),
      user: `${run.route.launcherType}_${run.route.launcherId}`,
      conversationId,
      variables: { launcher_type: run.route.launcherType, launcher_id: run.route.launcherId, sender_id: run.route.senderId, session_id: run.route.sessionId },
      stream: run.stream,
      removeThink: run.removeThink ?? false,
      emit,
      signal,
    };
    if (kind === 'local-agent') throw new Error('the local agent is no external runner');
    const result = await EXTERNAL_RUNNERS[kind](settings, input);
    if (result.conversationId && result.conversationId !== conversationId) {
      const ttl = run.externalConversationTtlSeconds ?? 0;
      if (ttl > 0) await this.infra.redis.set(key, result.conversationId, 'EX', ttl);
      else await this.infra.redis.set(key, result.conversationId, 'EX', 90 * 24 * 3600); // "never" still ends: the conversation is long gone by then
    }
    return result;
  }
}

/** LangBot's fixed request timeout for the runners whose settings have none. */
const DEFAULT_TIMEOUT_MS = 120_000;

/** One entry per external runner: its pipeline settings (`ai.<runner>`) read into its config, then the call. */
const EXTERNAL_RUNNERS: Record<Exclude<RunnerKind, 'local-agent'>, (s: Settings, input: ExternalInput) => Promise<ExternalResult>> = {
  'dify-service-api': (s, input) => runDify(difyConfig(s), input),
  'n8n-service-api': (s, input) => runN8n(n8nConfig(s), input),
  'coze-api': (s, input) => runCoze(cozeConfig(s), input),
  'langflow-api': (s, input) => runLangflow(langflowConfig(s), input),
  'dashscope-app-api': (s, input) => runDashscope(dashscopeConfig(s), input),
};

/** A boolean setting written as a boolean or as LangBot's form strings. */
const bool = (v: unknown, d: boolean) => (typeof v === 'boolean' ? v : v === 'true' ? true : v === 'false' ? false : d);

function difyConfig(s: Settings): DifyConfig {
  const appType = str(s['app-type'], 'chat');
  return {
    baseUrl: str(s['base-url'], 'https://api.dify.ai/v1'),
    appType: appType === 'agent' || appType === 'workflow' || appType === 'chatflow' ? appType : 'chat',
    apiKey: secret(s['api-key']),
    basePrompt: str(s['base-prompt'], 'When the file content is readable, please read the content of this file. When the file is an image, describe the content of this image.'),
    timeoutMs: 120_000,
  };
}

function n8nConfig(s: Settings): N8nConfig {
  const auth = str(s['auth-type'], 'none');
  return {
    webhookUrl: str(s['webhook-url']),
    authType: auth === 'basic' || auth === 'jwt' || auth === 'header' ? auth : 'none',
    basicUsername: str(s['basic-username']),
    basicPassword: secret(s['basic-password']),
    jwtSecret: secret(s['jwt-secret']),
    jwtAlgorithm: str(s['jwt-algorithm'], 'HS256'),
    headerName: str(s['header-name']),
    headerValue: secret(s['header-value']),
    timeoutMs: num(s.timeout, 120) * 1000,
    outputKey: str(s['output-key'], 'response'),
  };
}

function cozeConfig(s: Settings): CozeConfig {
  return {
    apiBase: str(s['api-base'], 'https://api.coze.cn') || 'https://api.coze.cn',
    apiKey: secret(s['api-key']),
    botId: str(s['bot-id']),
    autoSaveHistory: bool(s['auto-save-history'], true),
    timeoutMs: num(s.timeout, 120) * 1000,
  };
}

/**
 * LangBot's code reads these keys with underscores while its default config writes them with hyphens
 * (which the defaults put on every pipeline): an underscore key the user wrote wins.
 */
const either = (s: Settings, underscore: string, hyphen: string) => s[underscore] ?? s[hyphen];

function langflowConfig(s: Settings): LangflowConfig {
  const raw = s.tweaks ?? '{}';
  let tweaks: unknown = raw;
  if (typeof raw === 'string') {
    try {
      tweaks = raw.trim() === '' ? {} : JSON.parse(raw);
    } catch {
      throw new ExternalRunnerError('langflow-api tweaks is not valid JSON');
    }
  }
  if (tweaks === null || typeof tweaks !== 'object' || Array.isArray(tweaks)) throw new ExternalRunnerError('langflow-api tweaks must be a JSON object');
  return {
    baseUrl: str(s['base-url'], 'http://localhost:7860'),
    apiKey: secret(s['api-key']),
    flowId: str(s['flow-id']),
    inputType: str(either(s, 'input_type', 'input-type'), 'chat'),
    outputType: str(either(s, 'output_type', 'output-type'), 'chat'),
    tweaks: tweaks as Record<string, unknown>,
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
}

function dashscopeConfig(s: Settings): DashscopeConfig {
  const appType = str(s['app-type'], 'agent');
  if (appType !== 'agent' && appType !== 'workflow') throw new ExternalRunnerError(`unsupported dashscope-app-api app-type ${JSON.stringify(appType)}; agent or workflow`);
  return {
    // Not a LangBot setting (its SDK's default endpoint); set it for another region or a proxy.
    baseUrl: str(s['base-url'], 'https://dashscope.aliyuncs.com/api/v1') || 'https://dashscope.aliyuncs.com/api/v1',
    appType,
    apiKey: secret(s['api-key']),
    appId: str(s['app-id']),
    referencesQuote: str(either(s, 'references_quote', 'references-quote'), '参考资料来自:'),
    timeoutMs: DEFAULT_TIMEOUT_MS,
  };
}
