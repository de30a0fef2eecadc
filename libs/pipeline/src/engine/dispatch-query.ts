import type { ReplyRoute } from '@conveyor/contracts';
import type { PipelineDefinition } from '../pipeline.js';
import { BOT_ACCOUNT_IDS, streamsTo } from './new-query.js';
import type { PipelineQuery, RespItem } from './query.js';

/** The dispatcher's view of a query for one item: what the stages after MessageProcessor read. */
export function itemQuery(queryId: string, route: ReplyRoute, pipeline: PipelineDefinition, item: RespItem | null): PipelineQuery {
  return {
    queryId,
    pipelineId: pipeline.id,
    route,
    senderName: '',
    receivedAt: new Date().toISOString(),
    config: pipeline.config,
    plugins: pipeline.plugins,
    messageChain: [],
    variables: {},
    streamOutput: streamsTo(route),
    botAccountId: BOT_ACCOUNT_IDS[route.adapter] ?? route.botId,
    prompt: [],
    messages: [],
    respMessages: item ? [item] : [],
    respMessageChain: [],
  };
}
