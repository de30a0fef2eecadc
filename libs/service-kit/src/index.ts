export * from './env.js';
export * from './infra.js';
export * from './infra.module.js';
export * from './bootstrap.js';
export * from './lifecycle.js';
export * from './role-consumer.js';
export * from './redis-attempt-store.js';
export * from './bot-pipelines.js';
