export * from './python.js';
export * from './verify.js';
export * from './errors.js';
export * from './adapter-config.js';
export * from './components.js';
export * from './responses.js';
export * from './bot-id.js';
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
export * from './callback.js';
export * from './callback-client.js';
export * from './adapter.js';
export * from './platform.js';
export { HttpBotEndpoint, type AcceptedHttpBotMessage, type HttpBotLogger, type HttpBotPorts, type HttpBotRequest, type HttpBotResponse, type SyncHold } from './endpoint.js';
