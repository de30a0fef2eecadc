export * from './types.js';
export * from './coalesce.js';
export * from './deliverer.js';
export { CachedBotConfigs, type BotConfig, type BotConfigLookup } from '@conveyor/platform-kit';
