import { withPipelineDefaults } from '../defaults.js';
import { PipelineConfigSchema, type PipelineSettings } from './schema.js';

export interface ConfigIssue {
  /** Dotted key path, e.g. `safety.rate-limit.limitation`, or `stages[3]`. */
  path: string;
  reason: string;
}

export type ParsedConfig = { ok: true; config: PipelineSettings } | { ok: false; issues: ConfigIssue[] };

/** LangBot defaults under the stored config, then coercion and validation. */
export function parsePipelineConfig(stored: unknown): ParsedConfig {
  if (stored !== null && stored !== undefined && (typeof stored !== 'object' || Array.isArray(stored))) {
    return { ok: false, issues: [{ path: '', reason: 'config must be an object' }] };
  }
  const merged = withPipelineDefaults(stored as Record<string, unknown> | null | undefined);
  const parsed = PipelineConfigSchema.safeParse(merged);
  if (parsed.success) return { ok: true, config: parsed.data };
  return {
    ok: false,
    issues: parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), reason: i.message })),
  };
}
