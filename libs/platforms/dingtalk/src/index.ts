export * from './config.js';
export * from './verify.js';
export * from './parse.js';
export * from './api.js';
export * from './adapter.js';
export * from './stream.js';
export * from './connection.js';
export * from './platform.js';
