export { ConfigFileError, formatKeyPath, type ConfigIssue } from './errors.js';
export { interpolateEnv, type Env } from './interpolate.js';
export { loadConfigFile, parseConfigText, type LoadConfigOptions } from './load.js';
export { applyConfigFile, describeChanges, FILE_MANAGED, notManagedWarning, syncConfigFile, type ApplyCounts, type ApplyOptions, type ApplySummary } from './apply.js';
export { BOT_ADAPTERS, MCP_TRANSPORTS, MODEL_ABILITIES, ConfigFileSchema } from './schema.js';
export type { ConveyorConfig } from './types.js';
export { storeKnowledgeDocuments, syncKnowledgeBases, type StoredDocument, type KnowledgeBaseSync } from './knowledge-documents.js';
