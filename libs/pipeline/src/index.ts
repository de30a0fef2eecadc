// The pipeline's public surface: what the orchestrator, the dispatcher, the admin and the config
// loader use. Stages, filters and engine internals stay inside; the package's own tests import them directly.
export { DEFAULT_PIPELINE_STAGES, defaultPipelineStages, isPipelineStageName, withPipelineDefaults, type PipelineConfig, type PipelineStageName } from './defaults.js';
export { PipelineConfigSchema } from './config/schema.js';
export { parsePipelineConfig, type ConfigIssue } from './config/load.js';
export { bindsPlugin, boundMcpServers, boundPlugins, boundSkills, instantiate, loadPipeline, type PipelineDefinition } from './pipeline.js';
export { knowledgeBaseIds, modelOf } from './stages/preprocessor.js';
export { CONTINUE, interrupt } from './engine/result.js';
export { isFinalItem, type PipelineQuery, type RespItem } from './engine/query.js';
export { type CommandPort, type HandoffPort, type HistoryPort, type LeasePort, type ModelInfoPort, type NoticeSink, type PipelineDeps, type HumanRequestPort, type PluginPort, type TakeoverPort } from './engine/ports.js';
export { type Stage } from './engine/stage.js';
export { checkOutput } from './engine/execute.js';
export { runStages } from './engine/run.js';
export { timedStages, type StageTime } from './engine/timed-stages.js';
export { newQuery } from './engine/new-query.js';
export { effectiveInstanceSettings, type EffectiveInstanceSettings, type InstanceDefaults } from './engine/instance-settings.js';
export { loadBanWords } from './filters/ban-word-file.js';
export { itemQuery } from './engine/dispatch-query.js';
export { botPipelineOf, unusableReason, type BotPipeline } from './pipeline-directory.js';
export { emitMessageReceived, messageReceivedListened } from './plugins/events.js';
export { aggregationSettings, mergeEnvelopes } from './aggregation.js';
export { runBeforeTurn, stagesBeforeTurn, type BeforeTurn } from './before-turn.js';
export { admissionRateWindow, type RateWindowQuestion } from './stages/rate-limit.js';

