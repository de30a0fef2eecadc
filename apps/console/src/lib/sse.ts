// A server-sent events reader for fetch bodies (the debug chat reads its stream with fetch, which
// carries the session cookie and can be aborted). Bounded: an event larger than MAX_EVENT_CHARS is an error.

export interface SseEvent {
  event: string;
  data: string;
}

export const MAX_EVENT_CHARS = 1_048_576;

/** Feeds text chunks in; complete events come out. */
export class SseParser {
  private buf = '';

  push(chunk: string): SseEvent[] {
    this.buf += chunk.replace(/\r\n?/g, '\n');
    const out: SseEvent[] = [];
    let end: number;
    while ((end = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, end);
      this.buf = this.buf.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length) out.push({ event, data: data.join('\n') });
    }
    if (this.buf.length > MAX_EVENT_CHARS) throw new Error(`an event of the stream is over ${MAX_EVENT_CHARS} characters`);
    return out;
  }
}
