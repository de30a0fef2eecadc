export * from './config.js';
export * from './parse.js';
export * from './pull.js';
export * from './adapter.js';
export * from './platform.js';
