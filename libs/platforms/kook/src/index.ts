// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { KookRest, KookApiError, KOOK_KMARKDOWN } from './rest.js';
export { KookSocket, KookGatewayError, KookSession, KOOK_SIGNAL, KOOK_PING_EVERY_MS, resumeUrl, frameText } from './socket.js';
export { KookMessageEvent, KOOK_TYPE, isMessageEvent, messageToChain, messageToQuery, chainToKMarkdown } from './convert.js';
export { kookConnection, sendWhole, KOOK_MAX_CONTENT } from './connection.js';
export { kookPlatform } from './platform.js';
