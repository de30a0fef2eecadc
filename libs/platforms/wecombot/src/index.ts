export * from './config.js';
export * from './parse.js';
export * from './stream.js';
export * from './adapter.js';
export * from './platform.js';
