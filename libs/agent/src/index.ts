export * from './model.js';
export * from './client-pool.js';
export * from './complete.js';
export * from './run-agent.js';
