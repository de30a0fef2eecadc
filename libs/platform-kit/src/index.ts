// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { holdsConnection, type Platform } from './platform.js';
export {
  headerOf, inboundQuery, queryOf, webhookAnswers, type HttpAnswer, type InboundMessage,
  type InboundPullContext, type InboundQuery, type LogRef, type OnceCredential, type PlatformInbound,
  type WebhookOutcome, type WebhookRequest,
} from './inbound.js';
export {
  chainToMessageText, splitMessageText, type DeliveryContext, type OutboundDeps, type OutboundReply,
  type PlatformAdapter, type PlatformLogger, type ReplyState, type SendResult,
} from './outbound.js';
export { type BotConfig, type BotConfigs } from './bot-configs.js';
export {
  PlatformRejectedError, type ConnectionDeps, type ConnectionState, type ConnectionStateSchema,
  type OpenConnection, type PlatformConnection, type StreamSnapshot,
} from './connection.js';
export { closeWebSocket } from './websocket.js';
export {
  IMAGE_PLACEHOLDER, MAX_IMAGES_PER_MESSAGE, MediaTooLargeError, hasPendingImages, imagePlaceholders, inlinedImage, pendingImage,
  readBoundedMedia, resolvePendingImages,
} from './media.js';
export {
  SyncRegistrations, handToHeldCall, releaseIfHeld, type ReplyHold, type SyncAck, type SyncPart,
} from './held-call.js';
export { SharedAccessTokens, appKey } from './access-tokens.js';
