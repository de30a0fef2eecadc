// The pipeline form is generated from the pipeline config schema (its JSON Schema form, from zod), so
// a key the schema gains shows up in the console without console changes, under LangBot's own name.

/** The part of JSON Schema that `z.toJSONSchema` emits for the pipeline config (`true`/`false`: any/no value). */
export type SchemaNode = JsonSchema | boolean;
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode | SchemaNode[];
  enum?: unknown[];
  anyOf?: SchemaNode[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
  description?: string;
}

export type FieldKind = 'object' | 'enum' | 'boolean' | 'integer' | 'number' | 'string' | 'string-list' | 'object-list' | 'json';

export interface FieldNode {
  kind: FieldKind;
  /** LangBot's key, e.g. `group-respond-rules`. */
  key: string;
  /** Key path from the config root. */
  path: string[];
  optional: boolean;
  children?: FieldNode[];
  /** `object-list`: the fields of one item, paths relative to the item. */
  itemFields?: FieldNode[];
  options?: string[];
  min?: number;
  /** Only bounds a person would type; the integer limits zod adds are left out. */
  max?: number;
}

const HUGE = 2 ** 52;

function typeOf(s: JsonSchema): string | undefined {
  return Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
}

export function buildFields(node: SchemaNode, path: string[] = [], optional = false): FieldNode {
  const key = path.at(-1) ?? '';
  const base = { key, path, optional };
  if (typeof node === 'boolean') return { ...base, kind: 'json' };
  const schema = node;
  if (schema.enum && schema.enum.every((v) => typeof v === 'string')) return { ...base, kind: 'enum', options: schema.enum.map(String) };
  const type = typeOf(schema);
  if (type === 'object' && schema.properties) {
    const required = new Set(schema.required ?? []);
    const children = Object.entries(schema.properties).map(([k, s]) => buildFields(s, [...path, k], !required.has(k) && (typeof s === 'boolean' || s.default === undefined)));
    return { ...base, kind: 'object', children };
  }
  if (type === 'boolean') return { ...base, kind: 'boolean' };
  if (type === 'integer' || type === 'number') {
    return {
      ...base,
      kind: type,
      min: schema.minimum !== undefined && Math.abs(schema.minimum) < HUGE ? schema.minimum : undefined,
      max: schema.maximum !== undefined && Math.abs(schema.maximum) < HUGE ? schema.maximum : undefined,
    };
  }
  if (type === 'string') return { ...base, kind: 'string' };
  const items = schema.items;
  if (type === 'array' && items && typeof items === 'object' && !Array.isArray(items)) {
    const itemType = typeOf(items);
    if (itemType === 'string' && !items.enum) return { ...base, kind: 'string-list' };
    if (itemType === 'object' && items.properties) {
      const item = buildFields(items, []);
      return { ...base, kind: 'object-list', itemFields: item.children };
    }
  }
  // Unions (a model id or {primary, fallbacks}), records and anything else: edited as JSON.
  return { ...base, kind: 'json' };
}

/** The message key of a config key's label: `cfg.` and its path (an item field of a list: the list's path, then the field). */
export function fieldLabelKey(path: readonly string[]): string {
  return `cfg.${path.join('.')}`;
}

/** The message key of one choice of an enum key. */
export function optionLabelKey(path: readonly string[], option: string): string {
  return `cfgopt.${path.join('.')}.${option}`;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function getAt(value: unknown, path: readonly string[]): unknown {
  let cur = value;
  for (const k of path) {
    if (!isRecord(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/** A copy of `value` with `path` set; objects on the way are created, siblings kept. `undefined` removes the key. */
export function setAt(value: unknown, path: readonly string[], next: unknown): unknown {
  if (path.length === 0) return next;
  const [k, ...rest] = path;
  const obj: Record<string, unknown> = isRecord(value) ? { ...value } : {};
  const child = setAt(obj[k], rest, next);
  if (child === undefined) delete obj[k];
  else obj[k] = child;
  return obj;
}

/** A number field's text as the config value: a number when it reads as one, else the text (the validation then names the key). */
export function numberInput(text: string, kind: 'integer' | 'number'): unknown {
  const t = text.trim();
  if (t === '') return t;
  const n = Number(t);
  if (!Number.isFinite(n) || (kind === 'integer' && !Number.isInteger(n))) return text;
  return n;
}

/** One string per line; blank lines dropped. */
export function linesToList(text: string): string[] {
  return text.split('\n').map((l) => l.trim()).filter(Boolean);
}

/** A JSON field's text: parsed JSON, or the plain text when it is not JSON (a model id). */
export function jsonOrText(text: string): unknown {
  const t = text.trim();
  if (/^[[{"]/.test(t) || t === 'true' || t === 'false' || t === 'null' || /^-?\d/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}
