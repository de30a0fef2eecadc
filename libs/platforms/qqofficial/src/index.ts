export * from './config.js';
export { seedOf, keyPairOf, keyPairFromSeed, signHex, verifyCallback } from './signature.js';
export { dispatchToQuery, targetOf, QQ_MESSAGE_EVENTS, type QqTarget, type DispatchOutcome } from './events.js';
export { QqApi, QqApiError, QQ_DEDUPLICATED } from './api.js';
export { qqOfficialInbound, QQ_OP } from './inbound.js';
export { qqOfficialConnection, QQ_INTENTS } from './connection.js';
export { QqOfficialAdapter, chainToQqText, QQ_MAX_CONTENT } from './adapter.js';
export { qqOfficialPlatform } from './platform.js';
