// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export {
  HEADER_SIGNATURE, HEADER_TIMESTAMP, sign, verifyInbound, type VerifyFailureReason,
} from './verify.js';
export { HttpBotError, requestIdFor } from './errors.js';
export { newAcceptedMessageId } from './responses.js';
export { normalizeBotId } from './bot-id.js';
export {
  headerValue,
  parseInboundMessage,
  parseInboundRequest,
  preflightInbound,
  type Failure,
  type HeaderSource,
  type InboundKind,
  type InboundMessage,
  type InboundRequestInput,
  type InboundRequestResult,
  type PreflightResult,
} from './parse.js';
export { callbackBody } from './callback.js';
export { deliverCallback } from './callback-client.js';
export { HTTP_BOT, httpBotPlatform } from './platform.js';
export { HttpBotEndpoint, type AcceptedHttpBotMessage, type HttpBotLogger, type HttpBotPorts, type HttpBotRequest, type HttpBotResponse, type SyncHold } from './endpoint.js';
