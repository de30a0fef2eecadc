export * from './config.js';
export * from './crypto.js';
export * from './message.js';
export * from './api.js';
export * from './adapter.js';
export * from './platform.js';
