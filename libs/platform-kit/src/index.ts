export * from './platform.js';
export * from './inbound.js';
export * from './outbound.js';
export * from './bot-configs.js';
export * from './connection.js';
export * from './websocket.js';
export * from './held-call.js';
export * from './access-tokens.js';
