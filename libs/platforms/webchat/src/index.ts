export * from './adapter.js';
export * from './message.js';
export * from './page.js';
export * from './platform.js';
