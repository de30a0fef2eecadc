export * from './types.js';
export * from './coalesce.js';
export * from './deliverer.js';
export type { BotConfig, BotConfigs } from '@conveyor/platform-kit';
