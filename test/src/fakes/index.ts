export * from './openai-server.js';
export * from './callback-receiver.js';
export * from './otlp-receiver.js';
export { Waiters } from './http-util.js';
export * from './telegram-server.js';
export * from './image-host.js';
export * from './slack-server.js';
export * from './line-server.js';
export * from './onebot-server.js';
