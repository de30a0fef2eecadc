// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { WEBCHAT_MAX_BODY_BYTES, parseWebChatMessage, webChatSessionId } from './parse.js';
export { WEBCHAT_PAGE } from './page.js';
export { WEBCHAT, webChatPlatform } from './platform.js';
