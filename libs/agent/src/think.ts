/**
 * `<think>` handling (LangBot 10.7 and 10.9). Reasoning models either put their reasoning inline in
 * `<think>…</think>` or send it in a separate `reasoning_content` field; with `remove-think` on, the
 * user sees neither, otherwise the separate field is shown wrapped in the same tags.
 */
const OPEN = '<think>';
const CLOSE = '</think>';

/** Non-streamed text: every think block removed, and the whitespace that separated it from the answer. */
export function stripThink(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>\s*/g, '').replace(/<think>[\s\S]*$/, '');
}

/** A non-streamed answer with the separate reasoning field shown as LangBot shows it. */
export function withReasoning(content: string, reasoning: string | undefined, removeThink: boolean): string {
  if (removeThink) return stripThink(content);
  return reasoning ? `<think>\n${reasoning}\n</think>\n${content}` : content;
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag` (a tag split across deltas). */
function partialTagSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (tag.startsWith(text.slice(text.length - n))) return n;
  return 0;
}

/**
 * Removes think blocks from streamed text whose tags may be split across deltas. Text that could be
 * the start of a tag is held back until the next delta decides it (or `flush` releases it).
 */
export class ThinkStripper {
  private inThink = false;
  private held = '';
  /** After a block closes, the whitespace before the answer is dropped too (as stripThink does). */
  private trimLeading = false;

  push(delta: string): string {
    let buf = this.held + delta;
    this.held = '';
    let out = '';
    while (buf) {
      if (this.inThink) {
        const end = buf.indexOf(CLOSE);
        if (end < 0) {
          const keep = partialTagSuffix(buf, CLOSE);
          this.held = buf.slice(buf.length - keep);
          return out;
        }
        buf = buf.slice(end + CLOSE.length);
        this.inThink = false;
        this.trimLeading = true;
        continue;
      }
      const start = buf.indexOf(OPEN);
      const visible = start >= 0 ? buf.slice(0, start) : buf.slice(0, buf.length - partialTagSuffix(buf, OPEN));
      out += this.visible(visible);
      if (start < 0) {
        this.held = buf.slice(visible.length);
        return out;
      }
      buf = buf.slice(start + OPEN.length);
      this.inThink = true;
    }
    return out;
  }

  /** End of stream: a held partial `<think` was text after all; an unclosed block stays hidden. */
  flush(): string {
    const rest = this.inThink ? '' : this.visible(this.held);
    this.held = '';
    return rest;
  }

  private visible(text: string): string {
    if (!this.trimLeading) return text;
    const trimmed = text.replace(/^\s+/, '');
    if (trimmed) this.trimLeading = false;
    return trimmed;
  }
}
