export { ConfigCache, ConfigReadModel, MAX_LISTED_BOTS, type BotEntry, type EnabledBot, type ConfigLogger, type ConfigReadModelOptions, type McpServerEntry, type ModelConfig, type SkillEntry, type StoredInstanceSettings } from './read-model.js';
export { InstanceSettingsSource, type InstanceSettingsDeps } from './instance-settings.js';
export { PluginAccess, type PluginPipelineAccess } from './plugin-access.js';
export { TakeoverDirectory, type TakeoverLogger, type TakeoverRows } from './takeover-directory.js';
export { HumanRequests, MAX_HUMAN_REQUEST_REASON, type HumanRequestInput, type HumanRequestLogger, type HumanRequestNotice, type HumanRequestRows } from './human-requests.js';
