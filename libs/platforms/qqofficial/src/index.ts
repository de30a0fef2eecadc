// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { seedOf, keyPairOf, keyPairFromSeed, signHex, verifyCallback } from './verify.js';
export { dispatchToQuery, targetOf, QQ_MESSAGE_EVENTS, type QqTarget, type DispatchOutcome } from './parse.js';
export { QqApi, QqApiError, QQ_DEDUPLICATED } from './api.js';
export { qqOfficialPlatform, qqOfficialInbound, QQ_OP } from './platform.js';
export { qqOfficialConnection, QQ_INTENTS } from './connection.js';
export { QqOfficialAdapter, chainToQqText, QQ_MAX_CONTENT } from './adapter.js';
