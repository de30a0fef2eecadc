export * from './model.js';
export * from './client-pool.js';
export * from './complete.js';
