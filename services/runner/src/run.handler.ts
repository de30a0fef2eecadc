import { Inject, Injectable } from '@nestjs/common';
import { RunnerEvent, type RunnerEventBody, type RunRequest } from '@conveyor/contracts';
import { INFRA, type Infra } from '@conveyor/service-kit';
import type { ConsumeContext } from '@conveyor/bus';
import { OpenAIClientPool, runLocalAgent } from '@conveyor/agent';
import { ConversationStore, QueryLog } from '@conveyor/persistence';
import { ModelDirectory } from './model-directory.js';

/** Executes one run request and publishes what it produced as runner events. */
@Injectable()
export class RunHandler {
  private readonly pool = new OpenAIClientPool();
  private readonly conversations: ConversationStore;
  private readonly queryLog: QueryLog;

  constructor(
    @Inject(INFRA) private readonly infra: Infra,
    private readonly models: ModelDirectory,
  ) {
    this.conversations = new ConversationStore(infra.prisma);
    this.queryLog = new QueryLog(infra.prisma);
  }

  async handle(run: RunRequest, ctx: ConsumeContext): Promise<void> {
    const attempt = ctx.deliveryCount;
    let seq = 0;
    const emit = (body: RunnerEventBody) => {
      const event = { v: 1, queryId: run.queryId, route: run.route, attempt, seq: seq++, ...body } as RunnerEvent;
      return this.infra.publisher.publish(this.infra.topology.subjects.event(run.route.botId), RunnerEvent, event, {
        msgId: `evt:${run.queryId}:${attempt}:${event.seq}`,
        queryId: run.queryId,
      });
    };
    const models = await this.models.resolve(run.model);
    const outcome = await runLocalAgent(run, models, { pool: this.pool, logger: this.infra.logger, signal: ctx.signal });
    if (outcome.ok) {
      await emit({ kind: 'message', message: outcome.reply });
      const userTurn = run.messages[run.messages.length - 1];
      await this.conversations.completeTurn(run.queryId, run.conversationId, [userTurn, outcome.reply]);
    } else {
      await emit({ kind: 'error', error: outcome.error, userText: outcome.userText });
      await this.queryLog.failed(run.queryId, outcome.error);
    }
    await emit({ kind: 'done' });
  }
}
