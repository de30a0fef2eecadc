export * from './content.js';
export * from './session.js';
export * from './pool.js';
