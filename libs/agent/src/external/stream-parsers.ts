/** Bounds for what a remote runner may send us (LangBot caps n8n responses too). */
export const MAX_REMOTE_RESPONSE_CHARS = 4 * 1024 * 1024;

async function* textChunks(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string> {
  if (!body) return;
  const decoder = new TextDecoder();
  let total = 0;
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) {
    const text = decoder.decode(bytes, { stream: true });
    total += text.length;
    if (total > MAX_REMOTE_RESPONSE_CHARS) throw new Error('remote runner response exceeds the size limit');
    yield text;
  }
  const rest = decoder.decode();
  if (rest) yield rest;
}

export interface SseMessage {
  /** The `event:` field; `message` when the event names none (as EventSource does). */
  event: string;
  /** The `data:` lines joined with newlines. */
  data: string;
}

/** Server-sent events with their names; comments (`:HTTP_STATUS/200`) and other fields are ignored. */
export async function* sseMessages(body: ReadableStream<Uint8Array> | null): AsyncGenerator<SseMessage> {
  let buf = '';
  let data: string[] = [];
  let event = 'message';
  for await (const text of textChunks(body)) {
    buf += text;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (line === '') {
        if (data.length) yield { event, data: data.join('\n') };
        data = [];
        event = 'message';
      } else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      else if (line.startsWith('event:')) event = line.slice(6).trim();
    }
  }
  if (data.length) yield { event, data: data.join('\n') };
}

/** Server-sent events: the `data:` of each event. */
export async function* sseEvents(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string> {
  for await (const m of sseMessages(body)) yield m.data;
}

/** End index (exclusive) of the JSON value starting at `i`, or -1 when it is not complete yet. */
function jsonEnd(s: string, i: number): number {
  const open = s[i];
  if (open !== '{' && open !== '[') return -1;
  let depth = 0;
  let inString = false;
  for (let j = i; j < s.length; j++) {
    const c = s[j];
    if (inString) {
      if (c === '\\') j++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

/**
 * n8n's streaming webhook answers with JSON objects back to back (`{"type":"item",...}{"type":"end"}`),
 * split anywhere by the network. Yields each complete object; `rest()` is whatever never parsed
 * (a plain, non-streamed body that was not an object, for instance).
 */
export async function* concatenatedJson(body: ReadableStream<Uint8Array> | null, whole: { text: string }): AsyncGenerator<unknown> {
  let buf = '';
  for await (const text of textChunks(body)) {
    whole.text += text;
    buf += text;
    for (;;) {
      const start = buf.search(/\S/);
      if (start < 0) {
        buf = '';
        break;
      }
      const end = jsonEnd(buf, start);
      if (end < 0) {
        if (buf[start] !== '{' && buf[start] !== '[') buf = ''; // not JSON; the caller uses whole.text
        break;
      }
      const piece = buf.slice(start, end);
      buf = buf.slice(end);
      try {
        yield JSON.parse(piece);
      } catch {
        // A malformed object is skipped, as LangBot does; the rest of the stream may be fine.
      }
    }
  }
}
