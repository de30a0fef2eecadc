export * from './config.js';
export * from './verify.js';
export * from './parse.js';
export * from './adapter.js';
export * from './platform.js';
export * from './frame.js';
export * from './socket.js';
export * from './connection.js';
