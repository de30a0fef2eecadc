/** An external runner's pipeline settings (`ai.<runner>`), as LangBot's config holds them. */
export type RunnerSettings = Record<string, unknown>;

/** Turns a secret setting into its value; `env:NAME` is read from the runner's environment. */
export type SecretResolver = (value: unknown) => string;

export const str = (v: unknown, d = '') => (typeof v === 'string' ? v : v == null ? d : String(v));
export const num = (v: unknown, d: number) => (Number.isFinite(Number(v)) && v !== '' && v != null ? Number(v) : d);
/** A boolean setting written as a boolean or as LangBot's form strings. */
export const bool = (v: unknown, d: boolean) => (typeof v === 'boolean' ? v : v === 'true' ? true : v === 'false' ? false : d);

/**
 * LangBot's code reads some keys with underscores while its default config writes them with hyphens
 * (which the defaults put on every pipeline): an underscore key the user wrote wins.
 */
export const either = (s: RunnerSettings, underscore: string, hyphen: string) => s[underscore] ?? s[hyphen];

/** LangBot's fixed request timeout for the runners whose settings have none. */
export const DEFAULT_TIMEOUT_MS = 120_000;
