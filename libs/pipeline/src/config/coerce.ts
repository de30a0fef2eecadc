// LangBot's config coercion (pipeline/config_coercion.py): values typed integer, number or boolean in
// the pipeline metadata are converted from strings (the web UI and pasted YAML produce "60", "true").
// A value that cannot be converted is left as it is; the schema then rejects it with its key path,
// where LangBot only logs a warning and fails later at run time.

/** Python's int(v): ints unchanged, floats truncated, numeric strings parsed, bools as 0/1. */
export function coerceInteger(v: unknown): unknown {
  if (v === null || v === undefined) return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : v;
  if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) return Number.parseInt(v.trim(), 10);
  return v;
}

/** Python's float(v). */
export function coerceNumber(v: unknown): unknown {
  if (v === null || v === undefined) return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(v)) return Number.parseFloat(v);
  return v;
}

/** Bools unchanged; "true"/"false" in any case; any other string stays (an error); the rest is Python's bool(v). */
export function coerceBoolean(v: unknown): unknown {
  if (v === null || v === undefined || typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const lower = v.toLowerCase();
    return lower === 'true' ? true : lower === 'false' ? false : v;
  }
  if (typeof v === 'number') return v !== 0;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return v;
}
