// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { LarkConfigSchema } from './config.js';
export { encryptLarkEvent, larkSignature } from './verify.js';
export { larkPlatform } from './platform.js';
export { LarkEndpointError } from './socket.js';
export { larkConnection } from './connection.js';
