import fc from 'fast-check';

/** Characters that have broken text handling somewhere: NUL, lone surrogates, BOM, bidi override, non-characters. */
export const awkwardChar = fc.constantFrom('\u0000', '\ud800', '\udc00', '\udbff', '\ufeff', '\u202e', '\uffff', '\ufffe', '😀', '\r\n', '"', '\\', '%00', '../', '\u0085', '\u2028', '${X}', '{{x}}');

/** Text with the occasional awkward character, and now and then a long run. */
export function hostileText(maxLength = 40): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength }) },
    { weight: 3, arbitrary: fc.array(fc.oneof(fc.string({ maxLength: 5 }), awkwardChar), { maxLength: 8 }).map((parts) => parts.join('')) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('x', 'é', '\ud800', '😀', '\u0000', ' '), fc.integer({ min: 200, max: 3_000 })).map(([c, n]) => c.repeat(n)) },
  );
}

/** Any JSON value, shallow. */
export const smallJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 });

/**
 * A value of any type where the protocol wants a string: text, numbers (including ±0, 1e308, NaN's
 * JSON spelling null), booleans, null, arrays, objects, and deep nesting (as a placeholder, see deepPlaceholder).
 */
export const anyTypedValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileText() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.constantFrom(0, -0, 1e308, -1e308, 2 ** 53 + 1, 5e-324, -1) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(smallJson, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 6 }), smallJson, { maxKeys: 3 }) },
  { weight: 1, arbitrary: deepPlaceholder() },
);

/**
 * Deeply nested JSON is built as text (JSON.stringify would recurse as deep): a generated value holds
 * this placeholder string, and `expandDeep` replaces it in the serialised body.
 */
export function deepPlaceholder(): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom('[', '{"a":'), fc.integer({ min: 20, max: 20_000 })).map(([open, depth]) => `@@DEEP:${open === '[' ? 'array' : 'object'}:${depth}@@`);
}

export function expandDeep(json: string): string {
  return json.replace(/"@@DEEP:(array|object):(\d+)@@"/g, (_, kind: string, depth: string) => {
    const n = Number(depth);
    return kind === 'array' ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
  });
}

/**
 * A header value fetch accepts (no control characters), sometimes long: up to 6,000 characters, so that
 * two of them stay under Node's 16 KiB header limit (past it the ingress answers 431 before any route;
 * the http-bot category goes past it on purpose now and then).
 */
export function headerText(maxLength = 40): fc.Arbitrary<string> {
  const safe = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });
  return fc.oneof(
    { weight: 4, arbitrary: safe },
    { weight: 1, arbitrary: fc.integer({ min: 257, max: 6_000 }).map((n) => 'k'.repeat(n)) },
    { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0xa0, max: 0xff }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 10 }) },
  );
}

/** Text that is not quite JSON (or is, but not what was asked for). */
export const brokenJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('{', '{"a":', '{"a":1,}', '[1,2', 'null', '"str"', '{"a":"\\ud800"}', 'NaN', '{}}', '', '{"q": "unterminated'),
  hostileText(30),
);

/** Every key path of a JSON value, the value itself included as []. */
export function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

/** A copy with the value at `path` replaced, removed (`undefined`), or a key added under it (a path past the end). */
export function mutate(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    if (rest.length === 0 && replacement === undefined) copy.splice(Number(head), 1);
    else copy[Number(head)] = mutate(copy[Number(head)], rest, replacement);
    return copy;
  }
  const copy: Record<string, unknown> = typeof value === 'object' && value !== null ? { ...(value as Record<string, unknown>) } : {};
  if (rest.length === 0 && replacement === undefined) delete copy[head];
  else copy[head] = mutate(copy[head], rest, replacement);
  return copy;
}

/** A copy of a valid value with one of its fields (at any depth) removed or given a value of another type. */
export function nearMiss(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.nat(), fc.option(anyTypedValue, { nil: undefined, freq: 4 })).map(([value, pick, replacement]) => {
    const all = paths(value).filter((p) => p.length > 0);
    return all.length === 0 ? replacement : mutate(value, all[pick % all.length], replacement);
  });
}
