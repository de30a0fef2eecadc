export * from './config.js';
export * from './parse.js';
export * from './verify.js';
export * from './bot-api.js';
export * from './adapter.js';
export * from './platform.js';
