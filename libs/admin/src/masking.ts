// Bot adapter settings, a pipeline's runner settings and MCP server settings hold secrets (a signing
// key, a bot token, an API key, an Authorization header). The API returns them masked, and a masked
// value sent back means "keep what is stored", so a console can round-trip a settings form without
// ever seeing the secrets.
//
// Which values are secrets is declared where the settings are: a platform's config schema marks its
// secret fields (`.meta({ secret: true })`), each external runner lists the settings it resolves as
// secrets (RUNNER_SECRET_SETTINGS). A key no schema declares (an MCP server's headers, a future key)
// falls back to its name: a secret-looking name is masked.
import { z } from 'zod';
import { AdminApi } from '@conveyor/contracts';
import { RUNNER_SECRET_SETTINGS } from '@conveyor/agent';
import { PipelineConfigSchema } from '@conveyor/pipeline/config';
import { platforms } from '@conveyor/platforms';
import { AdminApiError } from './errors.js';

const SECRET_KEY = /secret|token|password|passwd|passphrase|api[-_]?key|authorization|credential|private[-_]?key|signature|cookie|encrypt|aes[-_]?key/i;
/** Characters shown at the end of a masked secret, only when the secret is long enough to keep it secret. */
const VISIBLE = 4;
const MIN_LENGTH_TO_SHOW = 16;

/** Whether a key no schema declares looks like it holds a secret. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

function maskValue(value: string): string {
  // A reference names where the secret is, not the secret.
  if (value.startsWith('env:') || value === '') return value;
  return AdminApi.SECRET_MASK_PREFIX + (value.length >= MIN_LENGTH_TO_SHOW ? value.slice(-VISIBLE) : '');
}

/** A copy with every string under a secret-looking key masked, at any depth (the name fallback). */
export function maskSecrets(value: unknown, underSecret = false): unknown {
  if (typeof value === 'string') return underSecret ? maskValue(value) : value;
  // A number under a secret key (a PIN written as digits) is a secret too; a flag carries none.
  if (typeof value === 'number' && underSecret) return maskValue(String(value));
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, underSecret));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, underSecret || isSecretKey(k))]));
  }
  return value;
}

/** The keys a settings schema declares, which of them are secrets, and the fields of object-valued ones. */
export interface SecretFields {
  known: ReadonlySet<string>;
  secret: ReadonlySet<string>;
  nested: ReadonlyMap<string, SecretFields>;
}

type Def = { type?: string; innerType?: z.ZodType; in?: z.ZodType; out?: z.ZodType; shape?: Record<string, z.ZodType>; options?: z.ZodType[]; getter?: () => z.ZodType };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schemas a wrapper (default, optional, a transform's pipe) stands for. */
function wrapped(schema: z.ZodType): z.ZodType[] {
  const def = defOf(schema);
  if (def.innerType) return [def.innerType];
  if (def.type === 'pipe') return [def.in, def.out].filter((s): s is z.ZodType => s !== undefined);
  if (def.type === 'lazy' && def.getter) return [def.getter()];
  return [];
}

function isMarkedSecret(schema: z.ZodType, depth = 0): boolean {
  if (z.globalRegistry.get(schema)?.secret === true) return true;
  return depth < 10 && wrapped(schema).some((s) => isMarkedSecret(s, depth + 1));
}

function shapesOf(schema: z.ZodType, depth = 0): Array<Record<string, z.ZodType>> {
  const def = defOf(schema);
  if (def.type === 'object' && def.shape) return [def.shape];
  if (depth >= 10) return [];
  if (def.type === 'union' && def.options) return def.options.flatMap((o) => shapesOf(o, depth + 1));
  return wrapped(schema).flatMap((s) => shapesOf(s, depth + 1));
}

/** The secret fields a settings schema marks; undefined when it describes no object. */
export function secretFieldsOf(schema: z.ZodType): SecretFields | undefined {
  const shapes = shapesOf(schema);
  if (!shapes.length) return undefined;
  const known = new Set<string>();
  const secret = new Set<string>();
  const nested = new Map<string, SecretFields>();
  for (const shape of shapes) {
    for (const [key, field] of Object.entries(shape)) {
      known.add(key);
      if (isMarkedSecret(field)) secret.add(key);
      const inner = secretFieldsOf(field);
      if (inner) nested.set(key, inner);
    }
  }
  return { known, secret, nested };
}

/**
 * A copy of `value` with the secrets `fields` declares masked. Under a declared key that is not secret
 * the value is kept (names decide nothing there), except for what nests below it undeclared; an
 * undeclared key falls back to its name. Without fields, names decide everywhere.
 */
export function maskConfig(value: unknown, fields: SecretFields | undefined): unknown {
  if (!fields || value === null || typeof value !== 'object' || Array.isArray(value)) return maskSecrets(value);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => {
    if (fields.secret.has(k)) return [k, maskSecrets(v, true)];
    const nested = fields.nested.get(k);
    if (nested) return [k, maskConfig(v, nested)];
    if (fields.known.has(k)) return [k, typeof v === 'object' && v !== null ? maskSecrets(v) : v];
    return [k, maskSecrets(v, isSecretKey(k))];
  }));
}

const botFields = new Map<string, SecretFields | undefined>();

/** The secret fields of a platform's bot settings (undefined for an adapter the registry does not know). */
export function botSecretFields(adapter: string): SecretFields | undefined {
  if (!botFields.has(adapter)) {
    const platform = platforms.get(adapter);
    botFields.set(adapter, platform ? secretFieldsOf(platform.botConfigSchema) : undefined);
  }
  return botFields.get(adapter);
}

/** A bot's adapter settings as the API returns them. */
export function maskBotConfig(adapter: string, config: unknown): unknown {
  return maskConfig(config, botSecretFields(adapter));
}

/** The pipeline config's declared keys, with each external runner's section (`ai.<runner>`) and its secrets. */
export const PIPELINE_SECRET_FIELDS: SecretFields = (() => {
  const base = secretFieldsOf(PipelineConfigSchema)!;
  const ai = base.nested.get('ai')!;
  const runners = Object.entries(RUNNER_SECRET_SETTINGS).map(([runner, keys]): [string, SecretFields] => [runner, { known: new Set(keys), secret: new Set(keys), nested: new Map() }]);
  const withRunners: SecretFields = { known: new Set([...ai.known, ...runners.map(([r]) => r)]), secret: ai.secret, nested: new Map([...ai.nested, ...runners]) };
  return { known: base.known, secret: base.secret, nested: new Map([...base.nested, ['ai', withRunners]]) };
})();

/** A pipeline config as the API returns it. */
export function maskPipelineConfig(config: unknown): unknown {
  return maskConfig(config, PIPELINE_SECRET_FIELDS);
}

/**
 * An MCP server's settings: `env` is the environment a stdio server is started with, where such
 * servers take their credentials under names of their own choosing, so every value there is a secret;
 * `headers` and anything else are judged by name.
 */
export const MCP_SECRET_FIELDS: SecretFields = { known: new Set(['command', 'args', 'cwd', 'url', 'headers', 'env']), secret: new Set(['env']), nested: new Map() };

/** An MCP server's settings as the API returns them. */
export function maskMcpConfig(config: unknown): unknown {
  return maskConfig(config, MCP_SECRET_FIELDS);
}

export function isMasked(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith(AdminApi.SECRET_MASK_PREFIX);
}

/**
 * `incoming` with each masked value replaced by the stored value at the same key path. A masked value
 * where nothing is stored is an error naming the field (`where` prefixes the path).
 */
export function unmaskSecrets(incoming: unknown, stored: unknown, where: string): unknown {
  if (isMasked(incoming)) {
    if (typeof stored === 'number') return stored;
    if (typeof stored !== 'string') throw AdminApiError.invalid(where, 'is a masked secret, but no secret is stored here; send the value itself');
    return stored;
  }
  if (Array.isArray(incoming)) return incoming.map((v, i) => unmaskSecrets(v, Array.isArray(stored) ? stored[i] : undefined, `${where}[${i}]`));
  if (incoming !== null && typeof incoming === 'object') {
    const from = stored !== null && typeof stored === 'object' && !Array.isArray(stored) ? (stored as Record<string, unknown>) : {};
    return Object.fromEntries(Object.entries(incoming).map(([k, v]) => [k, unmaskSecrets(v, from[k], `${where}.${k}`)]));
  }
  return incoming;
}
