// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export {
  type EventDelivery, type Outbound, type OutboundReply, type PlatformAdapter, type ReplyRef, type SendResult,
} from './types.js';
export { Deliverer } from './deliverer.js';
export type { BotConfig, BotConfigs } from '@conveyor/platform-kit';
export { directRoute, sendToChat, type DirectSendDeps } from './direct-send.js';
