export * from './common.js';
export * from './stream-parsers.js';
export * from './dify.js';
export * from './n8n.js';
