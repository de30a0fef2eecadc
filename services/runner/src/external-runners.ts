import { redisKeys } from '@conveyor/contracts';
import { Inject, Injectable } from '@nestjs/common';
import { messageText, type RunRequest } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { inlineImages, isExternalRunner, runExternalRunner, runTelemetry, str, type AgentItem, type ExternalImage, type ExternalInput, type ExternalResult, type ImageSource, type RunnerSettings } from '@conveyor/agent';
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

  /** `images`: the runner's bounded image reader, for the runners that upload the user's images. */
  async run(run: RunRequest, emit: (item: AgentItem) => Promise<void>, signal: AbortSignal, images?: { source: ImageSource; maxImages: number }): Promise<ExternalResult> {
    const kind = run.runner ?? 'local-agent';
    if (!isExternalRunner(kind)) throw new Error('the local agent is no external runner');
    const pipeline = await this.infra.config.pipelineConfig(run.pipelineId);
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
      botId: run.route.botId,
      ...(images ? { images: () => this.userImages(run, images, signal) } : {}),
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

  /**
   * The user message's images as bytes, read as the local agent reads them for a model (the same
   * limits; an unreadable one is left out and logged).
   */
  private async userImages(run: RunRequest, images: { source: ImageSource; maxImages: number }, signal: AbortSignal): Promise<ExternalImage[]> {
    const user = run.messages[run.messages.length - 1];
    if (!user || !Array.isArray(user.content) || !user.content.some((p) => p.type === 'image_url')) return [];
    const [inlined] = await inlineImages([user], { ...images, logger: this.infra.logger, queryId: run.queryId, signal });
    const out: ExternalImage[] = [];
    for (const part of Array.isArray(inlined.content) ? inlined.content : []) {
      if (part.type !== 'image_url') continue;
      const m = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(part.image_url.url);
      if (m) out.push({ contentType: m[1].toLowerCase(), bytes: Buffer.from(m[2], 'base64') });
    }
    return out;
  }
}
