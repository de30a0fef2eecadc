export * from './config.js';
export * from './message.js';
export * from './stream.js';
export * from './adapter.js';
export * from './platform.js';
