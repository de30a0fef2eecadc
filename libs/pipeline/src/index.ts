export * from './defaults.js';
export * from './run-request.js';
