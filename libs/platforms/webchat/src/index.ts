export * from './adapter.js';
export * from './parse.js';
export * from './page.js';
export * from './platform.js';
