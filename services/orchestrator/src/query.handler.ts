import { Inject, Injectable } from '@nestjs/common';
import { LIMITS, RunRequest, type QueryEnvelope } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { PermanentError, type ConsumeContext } from '@conveyor/bus';
import { buildRunRequest } from '@conveyor/pipeline';
import { ConversationStore, QueryLog } from '@conveyor/persistence';
import { currentTraceId } from '@conveyor/telemetry';
import { PipelineDirectory } from './pipeline-directory.js';

/**
 * Walks a query through the pipeline up to the runner. The stage engine arrives with issue 3; until
 * then every query becomes a run request with the pipeline's prompt and the chat's history.
 */
@Injectable()
export class QueryHandler {
  private readonly conversations: ConversationStore;
  private readonly queryLog: QueryLog;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly pipelines: PipelineDirectory,
  ) {
    this.conversations = new ConversationStore(infra.prisma);
    this.queryLog = new QueryLog(infra.prisma);
  }

  async handle(query: QueryEnvelope, ctx: ConsumeContext): Promise<void> {
    const { route } = query;
    const pipeline = await this.pipelines.forBot(route.botId);
    await this.queryLog.running({
      id: query.queryId,
      botId: route.botId,
      pipelineId: pipeline?.pipelineId ?? null,
      launcherType: route.launcherType,
      launcherId: route.launcherId,
      receivedAt: new Date(query.receivedAt),
      traceId: currentTraceId(),
      attempt: ctx.deliveryCount,
    });
    if (!pipeline || !pipeline.enabled) {
      const reason = pipeline ? `bot ${route.botId} is disabled` : `bot ${route.botId} not found`;
      await this.queryLog.failed(query.queryId, reason);
      throw new PermanentError(reason);
    }
    const conversation = await this.conversations.activeConversation(
      { botId: route.botId, launcherType: route.launcherType, launcherId: route.launcherId },
      pipeline.pipelineId,
    );
    const history = conversation.created ? [] : await this.conversations.history(conversation.id, LIMITS.historyMessages);
    const run = buildRunRequest({
      query,
      pipelineId: pipeline.pipelineId,
      conversationId: conversation.id,
      config: pipeline.config as never,
      history,
      stream: false,
    });
    await this.infra.publisher.publish(this.infra.topology.subjects.run(route.botId), RunRequest, run, {
      msgId: `run:${query.queryId}`,
      queryId: query.queryId,
    });
  }
}
