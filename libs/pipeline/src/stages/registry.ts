import type { PipelineStageName } from '../defaults.js';
import type { StageFactory } from '../engine/stage.js';
import { banSessionCheck } from './ban-session.js';
import { contentFilter } from './content-filter.js';
import { groupRespondRuleCheck } from './group-respond-rule.js';
import { longTextProcess } from './long-text.js';
import { messageProcessor } from './message-processor.js';
import { preProcessor } from './preprocessor.js';
import { releaseRateLimit, requireRateLimit } from './rate-limit.js';
import { responseWrapper } from './response-wrapper.js';
import { sendResponseBack } from './send-response-back.js';
import { conversationMessageTruncator } from './truncator.js';

/** LangBot's stage names; one factory may serve several names (content filter, rate limit). */
export const STAGE_REGISTRY: Record<PipelineStageName, StageFactory> = {
  GroupRespondRuleCheckStage: groupRespondRuleCheck,
  BanSessionCheckStage: banSessionCheck,
  PreContentFilterStage: contentFilter,
  PreProcessor: preProcessor,
  ConversationMessageTruncator: conversationMessageTruncator,
  RequireRateLimitOccupancy: requireRateLimit,
  MessageProcessor: messageProcessor,
  ReleaseRateLimitOccupancy: releaseRateLimit,
  PostContentFilterStage: contentFilter,
  ResponseWrapper: responseWrapper,
  LongTextProcessStage: longTextProcess,
  SendResponseBackStage: sendResponseBack,
};
