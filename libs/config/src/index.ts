// The configuration authority: the desired state in conveyor.yaml (loaded, validated, applied to the
// database idempotently), the checks both the file and the admin API make on what they store, and the
// setup and kb command lines. Storage itself is @conveyor/persistence, which never depends on this.
export { ConfigFileError, formatKeyPath, type ConfigIssue } from './errors.js';
export { interpolateEnv, type Env } from './interpolate.js';
export { loadConfigFile, parseConfigText, type LoadConfigOptions } from './load.js';
export { applyConfigFile, describeChanges, FILE_MANAGED, notManagedWarning, syncConfigFile, type ApplyCounts, type ApplyOptions, type ApplySummary } from './apply.js';
export { BOT_ADAPTERS, MCP_TRANSPORTS, MODEL_ABILITIES, ConfigFileSchema } from './schema.js';
export type { ConveyorConfig } from './types.js';
export { readConfigSkills } from './skills.js';
export { storeKnowledgeDocuments, syncKnowledgeBases, type StoredDocument, type KnowledgeBaseSync } from './knowledge-documents.js';
export { validateBotSettings, validatePipeline, type BotSettingsIssue, type PipelineReferences, type ValidatedPipeline } from './validation.js';
