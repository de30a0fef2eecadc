import { redisKeys } from '@conveyor/contracts';
import { Inject, Injectable } from '@nestjs/common';
import { messageText, type RunRequest } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { runDify, runN8n, type AgentItem, type DifyConfig, type ExternalResult, type N8nConfig } from '@conveyor/agent';
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
    const input = {
      query: messageText(user),
      user: `${run.route.launcherType}_${run.route.launcherId}`,
      conversationId,
      variables: { launcher_type: run.route.launcherType, launcher_id: run.route.launcherId, sender_id: run.route.senderId, session_id: run.route.sessionId },
      stream: run.stream,
      removeThink: run.removeThink ?? false,
      emit,
      signal,
    };
    const result = kind === 'dify-service-api' ? await runDify(difyConfig(settings), input) : await runN8n(n8nConfig(settings), input);
    if (result.conversationId && result.conversationId !== conversationId) {
      const ttl = run.externalConversationTtlSeconds ?? 0;
      if (ttl > 0) await this.infra.redis.set(key, result.conversationId, 'EX', ttl);
      else await this.infra.redis.set(key, result.conversationId, 'EX', 90 * 24 * 3600); // "never" still ends: the conversation is long gone by then
    }
    return result;
  }
}

function difyConfig(s: Settings): DifyConfig {
  const appType = str(s['app-type'], 'chat');
  return {
    baseUrl: str(s['base-url'], 'https://api.dify.ai/v1'),
    appType: appType === 'agent' || appType === 'workflow' ? appType : 'chat',
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
