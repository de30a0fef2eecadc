export * from './fakes/index.js';
export * from './harness/system.js';
export * from './harness/services.js';
export * from './harness/wait.js';
export * from './harness/ids.js';
export * from './harness/ports.js';
export * from './harness/dependencies.js';
