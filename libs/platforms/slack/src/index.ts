export * from './config.js';
export * from './signature.js';
export * from './events.js';
export * from './adapter.js';
export * from './socket-mode.js';
export * from './connection.js';
export * from './platform.js';
