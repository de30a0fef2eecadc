// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { SatoriSocket, SatoriResume, SATORI_OP, type SatoriLogin } from './socket.js';
export { contentToChain, chainToContent, escapeText, unescapeText } from './elements.js';
export { SatoriMessageEvent, messageToQuery, SATORI_DIRECT } from './convert.js';
export { satoriConnection, sendWhole, createMessage, SatoriApiError, SATORI_MAX_CONTENT } from './connection.js';
export { satoriPlatform } from './platform.js';
