export * from './config.js';
export * from './update.js';
export * from './inbound-check.js';
export * from './bot-api.js';
export * from './adapter.js';
export * from './platform.js';
