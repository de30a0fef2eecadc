export * from './config.js';
export * from './signature.js';
export * from './message.js';
export * from './api.js';
export * from './adapter.js';
export * from './stream.js';
export * from './connection.js';
export * from './platform.js';
