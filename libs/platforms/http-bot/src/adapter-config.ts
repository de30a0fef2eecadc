import { z } from 'zod';
import { pyTruthy } from './python.js';

/**
 * LangBot's http_bot adapter config keys, read the way LangBot reads them: a key that is absent gets
 * its default, a key that is present is interpreted with Python semantics (`config.get(k, d)`), so
 * e.g. `signature_required: null` is falsy, not the default.
 */

/** `int(value)` as LangBot applies it to the numeric keys; anything Python rejects is a config error. */
const pyInt = (key: string) =>
  z.unknown().transform((v, ctx): number => {
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v === 'number' && Number.isFinite(v)) return Math.trunc(v);
    if (typeof v === 'string' && /^\s*[+-]?\d(?:_?\d)*\s*$/.test(v)) return Number(v.replace(/_/g, ''));
    ctx.addIssue({ code: 'custom', message: `${key} must be an integer, got ${JSON.stringify(v)}` });
    return z.NEVER;
  });

/** A missing or null secret/URL behaves as the empty string. */
const optionalString = z
  .string()
  .nullable()
  .optional()
  .transform((v) => v ?? '');

const absent = <T>(value: T) => (v: unknown) => (v === undefined ? value : v);

/**
 * Turning verification off must be a deliberate `false`. LangBot reads the key with Python
 * truthiness, so a stray `null` (a YAML key left without a value), `0` or `""` would silently accept
 * unsigned requests from anyone; those are refused here instead. Truthy values keep their meaning.
 */
const signatureRequired = z.unknown().transform((v, ctx): boolean => {
  if (typeof v === 'boolean') return v;
  if (pyTruthy(v)) return true;
  ctx.addIssue({ code: 'custom', message: `signature_required must be true or false, got ${JSON.stringify(v) ?? String(v)}; set it to false to accept unsigned requests` });
  return z.NEVER;
});

export const AdapterConfigSchema = z.object({
  inbound_secret: optionalString.meta({ secret: true }),
  callback_url: optionalString,
  outbound_secret: optionalString.meta({ secret: true }),
  /** Only the exact value "group" selects group sessions; LangBot compares with `== 'group'`. */
  default_session_type: z.preprocess(
    absent('person'),
    z.unknown().transform((v): 'person' | 'group' => (v === 'group' ? 'group' : 'person')),
  ),
  signature_required: z.preprocess(absent(true), signatureRequired),
  /** Seconds per callback attempt; ≤ 0 means no timeout (aiohttp), and the /sync wait is 4×. */
  callback_timeout: z.preprocess(absent(15), pyInt('callback_timeout')),
  /** Extra attempts after the first for retryable failures; ≤ 0 means a single attempt. */
  callback_max_retries: z.preprocess(absent(3), pyInt('callback_max_retries')),
}).superRefine((config, ctx) => {
  // An HMAC with the empty key is one anybody can compute: verifying against it accepts every
  // request while looking signed.
  if (config.signature_required && config.inbound_secret === '') {
    ctx.addIssue({
      code: 'custom',
      path: ['inbound_secret'],
      message: 'inbound_secret must be set while signature_required is on (an empty key verifies any request); set signature_required: false to accept unsigned requests',
    });
  }
});

export type AdapterConfig = z.output<typeof AdapterConfigSchema>;
export type AdapterConfigInput = z.input<typeof AdapterConfigSchema>;

/**
 * Parsed configs by the stored object they came from: services hold a bot's row for a while and read
 * its config on every message and every reply part, so each row is parsed once. Callers must not
 * change the returned object.
 */
const parsedConfigs = new WeakMap<object, z.ZodSafeParseResult<AdapterConfig>>();

/** Like parseAdapterConfig, without throwing: a row the schema refuses is answered, not crashed on. */
export function safeParseAdapterConfig(raw: unknown): z.ZodSafeParseResult<AdapterConfig> {
  if (typeof raw !== 'object' || raw === null) return AdapterConfigSchema.safeParse(raw ?? {});
  let result = parsedConfigs.get(raw);
  if (!result) {
    result = AdapterConfigSchema.safeParse(raw);
    parsedConfigs.set(raw, result);
  }
  return result;
}

/** Throws a ZodError naming the field when the schema refuses the config. */
export function parseAdapterConfig(raw: unknown): AdapterConfig {
  const result = safeParseAdapterConfig(raw);
  if (!result.success) throw result.error;
  return result.data;
}

/** The key LangBot signs callbacks with: `outbound_secret or inbound_secret or ''`. */
export function outboundSigningKey(config: AdapterConfig): string {
  return config.outbound_secret || config.inbound_secret || '';
}

/** Per-attempt timeout; undefined means none, as aiohttp treats `total <= 0`. */
export function callbackTimeoutMs(config: AdapterConfig): number | undefined {
  return config.callback_timeout > 0 ? config.callback_timeout * 1000 : undefined;
}

/** How long /sync waits for the final reply, as in LangBot: `int(callback_timeout) * 4` seconds. */
export function syncWaitMs(config: AdapterConfig): number {
  return Math.max(0, config.callback_timeout * 4 * 1000);
}
