import { LIMITS, type ForwardComponentT, type ForwardNodeT, type MessageComponent } from '@conveyor/contracts';
import { PythonRecursionError, pyRepr, pyStr, pyTypeName } from './python.js';

/**
 * Inbound message-chain parsing with the LangBot SDK's rules: registered component types are
 * validated like pydantic v2 in lax mode (extra fields dropped, "12" accepted for an int, a number
 * rejected for a string), unregistered types and malformed elements become `Unknown` instead of
 * failing the request. Only a registered type that fails validation rejects the whole message.
 */

/** Registered in SDK 0.5.5 but with no representation in the contracts, so treated as unregistered. */
export const UNSUPPORTED_SDK_TYPES: ReadonlySet<string> = new Set([
  'WeChatMiniPrograms',
  'WeChatForwardMiniPrograms',
  'WeChatEmoji',
  'WeChatLink',
  'WeChatForwardLink',
  'WeChatForwardImage',
  'WeChatForwardFile',
  'WeChatAppMsg',
  'WeChatForwardQuote',
]);

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input: unknown;
}

/** Carries pydantic-style validation text; callers put `message` after "failed to parse message: ". */
export class ChainParseError extends Error {}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function shortRepr(v: unknown): string {
  let text: string;
  try {
    text = pyRepr(v);
  } catch {
    text = '...';
  }
  return text.length > 100 ? `${text.slice(0, 47)}...${text.slice(-47)}` : text;
}

function formatIssues(model: string, issues: Issue[]): string {
  const head = `${issues.length} validation error${issues.length === 1 ? '' : 's'} for ${model}`;
  const lines = issues.map(
    (i) =>
      `${i.loc.join('.')}\n  ${i.msg} [type=${i.type}, input_value=${shortRepr(i.input)}, input_type=${pyTypeName(i.input)}]`,
  );
  return [head, ...lines].join('\n');
}

/** Reads fields of one component, collecting issues like pydantic does, then throws them together. */
class FieldReader {
  readonly issues: Issue[] = [];
  constructor(
    private readonly data: Obj,
    private readonly prefix: (string | number)[] = [],
  ) {}

  private fail(key: string, msg: string, type: string, input: unknown): undefined {
    this.issues.push({ loc: [...this.prefix, key], msg, type, input });
    return undefined;
  }

  private missing(key: string): undefined {
    return this.fail(key, 'Field required', 'missing', this.data);
  }

  /** Records a `missing` issue when the key is absent; returns whether it is present. */
  require(key: string): boolean {
    if (this.has(key)) return true;
    this.missing(key);
    return false;
  }

  /** `path` is validated as the SDK does but, unlike LangBot, never kept: callers must not name server files. */
  discardPath(): '' {
    this.str('path', '');
    return '';
  }

  has(key: string): boolean {
    return Object.hasOwn(this.data, key);
  }

  raw(key: string): unknown {
    return this.data[key];
  }

  str(key: string, dflt?: string): string | undefined {
    if (!this.has(key)) return dflt ?? this.missing(key);
    const v = this.data[key];
    return typeof v === 'string' ? v : this.fail(key, 'Input should be a valid string', 'string_type', v);
  }

  int(key: string, dflt?: number): number | undefined {
    if (!this.has(key)) return dflt ?? this.missing(key);
    const v = this.data[key];
    const n = laxInt(v);
    if (n !== undefined) return n;
    if (typeof v === 'number' && Number.isInteger(v))
      return this.fail(key, `Input should be a valid integer between ${Number.MIN_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`, 'int_range', v);
    if (typeof v === 'number')
      return this.fail(key, 'Input should be a valid integer, got a number with a fractional part', 'int_from_float', v);
    if (typeof v === 'string')
      return this.fail(key, 'Input should be a valid integer, unable to parse string as an integer', 'int_parsing', v);
    return this.fail(key, 'Input should be a valid integer', 'int_type', v);
  }

  /** `str | int`, optionally `| None`: strings and integers are kept as given. */
  id(key: string, opts: { nullable: boolean; required: boolean }): string | number | null | undefined {
    if (!this.has(key)) return opts.required ? this.missing(key) : null;
    const v = this.data[key];
    if (v === null && opts.nullable) return null;
    if (typeof v === 'string') return v;
    const n = laxInt(v);
    if (n !== undefined) return n;
    // Python takes 2.7e76 as the integer it spells; no JS number holds that exactly, so its digits are kept as text.
    if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v).toString();
    return this.fail(key, 'Input should be a valid string or integer', 'union_type', v);
  }

  throwIfInvalid(model: string): void {
    if (this.issues.length > 0) throw new ChainParseError(formatIssues(model, this.issues));
  }
}

/** Integers that survive as JS numbers: every bus message carries them, and its schema wants safe integers. */
function laxInt(v: unknown): number | undefined {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) {
    const n = Number(v);
    if (Number.isSafeInteger(n)) return n;
  }
  return undefined;
}

/** Unix seconds from what pydantic accepts for a datetime: numbers (s or ms) and ISO strings. */
function laxUnixSeconds(v: unknown): number | undefined {
  let seconds: number | undefined;
  if (typeof v === 'number' && Number.isFinite(v)) seconds = v;
  else if (typeof v === 'string') {
    const trimmed = v.trim();
    if (/^[+-]?\d+(\.\d+)?$/.test(trimmed)) seconds = Number(trimmed);
    else if (/^\d{4}-\d{2}-\d{2}/.test(trimmed)) {
      const ms = Date.parse(trimmed);
      if (!Number.isNaN(ms)) return Math.floor(ms / 1000);
    }
  }
  if (seconds === undefined) return undefined;
  // pydantic reads values above 2e10 as milliseconds.
  const unix = Math.floor(Math.abs(seconds) > 2e10 ? seconds / 1000 : seconds);
  // Python's datetime spans the years 1 to 9999; pydantic refuses a time outside them.
  return unix >= FIRST_DATETIME_SECONDS && unix <= LAST_DATETIME_SECONDS ? unix : undefined;
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in Unix seconds. */
const FIRST_DATETIME_SECONDS = -62_135_596_800;
const LAST_DATETIME_SECONDS = 253_402_300_799;

function unknown(text: string): MessageComponent {
  return { type: 'Unknown', text };
}

function parseNestedChain(r: FieldReader, key: string, value: unknown, depth: number): MessageComponent[] | undefined {
  if (!Array.isArray(value)) {
    r.issues.push({ loc: [key], msg: 'Input should be a valid list', type: 'list_type', input: value });
    return undefined;
  }
  return parseChainElements(value, depth + 1);
}

function parseForwardNode(node: unknown, index: number, depth: number, outer: FieldReader): ForwardNodeT | undefined {
  if (!isObj(node)) {
    outer.issues.push({
      loc: ['node_list', index],
      msg: 'Input should be a valid dictionary or instance of ForwardMessageNode',
      type: 'model_type',
      input: node,
    });
    return undefined;
  }
  const r = new FieldReader(node, ['node_list', index]);
  const sender_id = r.id('sender_id', { nullable: true, required: false });
  const sender_name = r.str('sender_name', '');
  const message_id = r.int('message_id', 0);
  let message_chain: MessageComponent[] | undefined;
  if (r.require('message_chain')) message_chain = parseNestedChain(r, 'message_chain', r.raw('message_chain'), depth);
  outer.issues.push(...r.issues);
  if (r.issues.length > 0) return undefined;
  return { sender_id: sender_id!, sender_name: sender_name!, message_chain: message_chain!, message_id: message_id! };
}

function parseForwardDisplay(r: FieldReader): ForwardComponentT['display'] {
  const empty = { title: '', brief: '', source: '', preview: [] as string[], summary: '' };
  if (!r.has('display')) return empty;
  const raw = r.raw('display');
  if (!isObj(raw)) {
    r.issues.push({ loc: ['display'], msg: 'Input should be a valid dictionary', type: 'dict_type', input: raw });
    return empty;
  }
  const d = new FieldReader(raw, ['display']);
  const out = {
    title: d.str('title', '') ?? '',
    brief: d.str('brief', '') ?? '',
    source: d.str('source', '') ?? '',
    preview: [] as string[],
    summary: d.str('summary', '') ?? '',
  };
  if (d.has('preview')) {
    const p = d.raw('preview');
    if (!Array.isArray(p)) d.issues.push({ loc: ['display', 'preview'], msg: 'Input should be a valid list', type: 'list_type', input: p });
    else
      p.forEach((item, i) => {
        if (typeof item === 'string') out.preview.push(item);
        else d.issues.push({ loc: ['display', 'preview', i], msg: 'Input should be a valid string', type: 'string_type', input: item });
      });
  }
  r.issues.push(...d.issues);
  return out;
}

/** Validates one element whose `type` is registered; throws ChainParseError on failure. */
function parseRegistered(type: string, data: Obj, depth: number): MessageComponent | undefined {
  const r = new FieldReader(data);
  let out: MessageComponent | undefined;
  switch (type) {
    case 'Plain': {
      const text = r.str('text');
      out = { type, text: text! };
      break;
    }
    case 'At': {
      const target = r.id('target', { nullable: false, required: true });
      out = { type, target: target as string | number, display: r.str('display', '')! };
      break;
    }
    case 'AtAll':
      out = { type };
      break;
    case 'Image':
      out = { type, image_id: r.str('image_id', '')!, url: r.str('url', '')!, path: r.discardPath(), base64: r.str('base64', '')! };
      break;
    case 'Voice':
      out = {
        type,
        voice_id: r.str('voice_id', '')!,
        url: r.str('url', '')!,
        path: r.discardPath(),
        base64: r.str('base64', '')!,
        length: r.int('length', 0)!,
      };
      break;
    case 'File':
      out = {
        type,
        id: r.str('id', '')!,
        name: r.str('name', '')!,
        size: r.int('size', 0)!,
        url: r.str('url', '')!,
        path: r.discardPath(),
        base64: r.str('base64', '')!,
      };
      break;
    case 'Quote': {
      const ids = {
        id: r.id('id', { nullable: true, required: false })!,
        group_id: r.id('group_id', { nullable: true, required: false })!,
        sender_id: r.id('sender_id', { nullable: true, required: false })!,
        target_id: r.id('target_id', { nullable: true, required: false })!,
      };
      let origin: MessageComponent[] | undefined;
      if (r.require('origin')) origin = parseNestedChain(r, 'origin', r.raw('origin'), depth);
      out = { type, ...ids, origin: origin! };
      break;
    }
    case 'Forward': {
      const display = parseForwardDisplay(r);
      const nodes: ForwardNodeT[] = [];
      if (r.has('node_list')) {
        const raw = r.raw('node_list');
        if (!Array.isArray(raw)) r.issues.push({ loc: ['node_list'], msg: 'Input should be a valid list', type: 'list_type', input: raw });
        else
          raw.forEach((n, i) => {
            const node = parseForwardNode(n, i, depth, r);
            if (node) nodes.push(node);
          });
      }
      out = { type, display, node_list: nodes };
      break;
    }
    case 'Source': {
      const id = r.id('id', { nullable: false, required: true });
      let timestamp: number | undefined;
      if (r.require('time')) {
        timestamp = laxUnixSeconds(r.raw('time'));
        if (timestamp === undefined)
          r.issues.push({ loc: ['time'], msg: 'Input should be a valid datetime', type: 'datetime_type', input: r.raw('time') });
      }
      out = { type, id: id as string | number, timestamp: timestamp! };
      break;
    }
    case 'Unknown':
      out = { type, text: r.str('text', '')! };
      break;
    default:
      return undefined;
  }
  r.throwIfInvalid(type);
  return out;
}

function parseElement(el: unknown, depth: number): MessageComponent {
  if (!isObj(el) || el.type === undefined || el.type === null) return unknown(`Invalid component data: ${pyRepr(el)}`);
  const type = el.type;
  if (typeof type === 'string' && !UNSUPPORTED_SDK_TYPES.has(type)) {
    const parsed = parseRegistered(type, el, depth);
    if (parsed) return parsed;
  }
  return unknown(`Unknown component type: ${pyStr(type)}`);
}

function parseChainElements(elements: unknown[], depth: number): MessageComponent[] {
  // Checked on the way down, so a 1 MiB body of nested quotes cannot exhaust the stack.
  if (depth > LIMITS.messageChainDepth) throw new ChainParseError(`message nesting deeper than ${LIMITS.messageChainDepth} levels`);
  return elements.map((el) => parseElement(el, depth));
}

/** The inbound `message` value as a chain, or ChainParseError (→ 400 failed to parse message). */
export function parseMessageChain(value: unknown): MessageComponent[] {
  if (!Array.isArray(value)) {
    throw new ChainParseError(
      formatIssues('MessageChain', [{ loc: [], msg: 'Input should be a valid list', type: 'list_type', input: value }]),
    );
  }
  if (value.length > LIMITS.messageChainComponents)
    throw new ChainParseError(`message has ${value.length} components, more than ${LIMITS.messageChainComponents}`);
  try {
    return parseChainElements(value, 0);
  } catch (err) {
    // Python's repr of a pathologically nested element raises RecursionError, failing the request.
    if (err instanceof PythonRecursionError) throw new ChainParseError(err.message);
    throw err;
  }
}
