export { ConfigCache, ConfigReadModel, type BotEntry, type ConfigLogger, type ConfigReadModelOptions, type McpServerEntry, type ModelConfig, type StoredInstanceSettings } from './read-model.js';
