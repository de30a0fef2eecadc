export * from './config.js';
export * from './crypto.js';
export * from './events.js';
export * from './adapter.js';
export * from './platform.js';
export * from './frame.js';
export * from './socket.js';
export * from './connection.js';
