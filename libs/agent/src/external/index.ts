export * from './common.js';
export * from './stream-parsers.js';
export * from './dify.js';
export * from './n8n.js';
export * from './coze.js';
export * from './dashscope.js';
export * from './langflow.js';
