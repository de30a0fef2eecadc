// LangBot's pipeline defaults: the stage order of `default_stage_order` and the values of
// `default-pipeline-config.json`, which LangBot writes into every new pipeline.
import defaultConfigJson from './default-pipeline-config.json' with { type: 'json' };

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** A pipeline config in LangBot's shape; the four sections are always present after defaults. */
export interface PipelineConfig extends JsonObject {
  trigger: JsonObject;
  safety: JsonObject;
  ai: JsonObject;
  output: JsonObject;
}

export const DEFAULT_PIPELINE_STAGES = [
  'GroupRespondRuleCheckStage',
  'BanSessionCheckStage',
  'PreContentFilterStage',
  'PreProcessor',
  'ConversationMessageTruncator',
  'RequireRateLimitOccupancy',
  'MessageProcessor',
  'ReleaseRateLimitOccupancy',
  'PostContentFilterStage',
  'ResponseWrapper',
  'LongTextProcessStage',
  'SendResponseBackStage',
] as const;

/** Every stage LangBot knows; the default order uses each once. */
export type PipelineStageName = (typeof DEFAULT_PIPELINE_STAGES)[number];

export function isPipelineStageName(name: string): name is PipelineStageName {
  return (DEFAULT_PIPELINE_STAGES as readonly string[]).includes(name);
}

/** A fresh copy each call, so a caller mutating its config cannot change anyone else's defaults. */
export function defaultPipelineConfig(): PipelineConfig {
  return structuredClone(defaultConfigJson) as PipelineConfig;
}

export function defaultPipelineStages(): PipelineStageName[] {
  return [...DEFAULT_PIPELINE_STAGES];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `partial` over `base`: objects merge key by key, everything else (arrays, scalars, null)
 * replaces, so a pasted LangBot config keeps its own lists instead of having defaults appended.
 * `undefined` means "not given" and keeps the base value. Neither input is modified.
 */
export function deepMerge(base: unknown, partial: unknown): unknown {
  if (partial === undefined) return structuredClone(base);
  if (!isPlainObject(base) || !isPlainObject(partial)) return structuredClone(partial);
  const out: Record<string, unknown> = structuredClone(base);
  for (const [key, value] of Object.entries(partial)) {
    const merged = Object.hasOwn(base, key) ? deepMerge(base[key], value) : deepMerge(undefined, value);
    // defineProperty, not assignment: a `__proto__` key from YAML must stay data, not a prototype.
    Object.defineProperty(out, key, { value: merged, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A full pipeline config: `partial` (any subset of LangBot's keys) over LangBot's defaults. */
export function withPipelineDefaults(partial: Record<string, unknown> | null | undefined): PipelineConfig {
  return deepMerge(defaultPipelineConfig(), partial ?? undefined) as PipelineConfig;
}
