export * from './limits.js';
export * from './topology.js';
export * from './headers.js';
export * from './message-chain.js';
export * from './storable-text.js';
export * from './llm-message.js';
export * from './messages.js';
export * from './redis-keys.js';
