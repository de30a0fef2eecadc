export * from './config.js';
export * from './kf.js';
export * from './pull.js';
export * from './adapter.js';
export * from './platform.js';
