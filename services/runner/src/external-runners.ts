import { redisKeys } from '@conveyor/contracts';
import { Inject, Injectable } from '@nestjs/common';
import { messageText, type RunRequest } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { isExternalRunner, runExternalRunner, runTelemetry, str, type AgentItem, type ExternalInput, type ExternalResult, type RunnerSettings } from '@conveyor/agent';
import { resolveApiKey } from '@conveyor/persistence';

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
    const kind = run.runner ?? 'local-agent';
    if (!isExternalRunner(kind)) throw new Error('the local agent is no external runner');
    const pipeline = await this.infra.prisma.pipeline.findUnique({ where: { id: run.pipelineId } });
    if (!pipeline) throw new Error(`pipeline ${run.pipelineId} not found`);
    const ai = ((pipeline.config as RunnerSettings)?.ai ?? {}) as RunnerSettings;
    const settings = (ai[kind] ?? {}) as RunnerSettings;
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
    const result = await runExternalRunner(kind, settings, secret, input, runTelemetry(run, false));
    // Written after every turn, not only when the id is new: LangBot's expire-time counts idle time
    // from the last message.
    if (result.conversationId) {
      const ttl = run.externalConversationTtlSeconds ?? 0;
      if (ttl > 0) await this.infra.redis.set(key, result.conversationId, 'EX', ttl);
      else await this.infra.redis.set(key, result.conversationId, 'EX', 90 * 24 * 3600); // "never" still ends: the conversation is long gone by then
    }
    return result;
  }
}
