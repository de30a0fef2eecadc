/**
 * `<think>` handling, as LangBot's model requester does it (`LiteLLMRequester._strip_think` and
 * `_ThinkStripState`, also while streaming).
 * Reasoning models either put their reasoning inline in `<think>…</think>` or send it in a separate
 * `reasoning_content` field; with `remove-think` on, the user sees neither, otherwise the separate
 * field is shown wrapped in the same tags.
 */
const OPEN = '<think>';
const CLOSE = '</think>';

/** Python's whitespace (`str.isspace`, and `\s` in a str pattern), which LangBot's `strip()` and regexes use. */
const PY_SPACE = '\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_SPACE_CHAR = new RegExp(`[${PY_SPACE}]`);
/** Reasoning the model began before the answer's first delta: everything up to a `</think>` no `<think>` precedes. */
const LEADING_ORPHAN = new RegExp(`^[${PY_SPACE}]*(?:(?!<think>)[\\s\\S])*?</think>[${PY_SPACE}]*`);
const BLOCK = /<think>[\s\S]*?<\/think>/g;

/** Python's `str.strip()`, or `str.rstrip()` with `end`. */
export function pyStrip(text: string, sides: 'both' | 'end' = 'both'): string {
  let start = 0;
  let end = text.length;
  while (sides === 'both' && start < end && PY_SPACE_CHAR.test(text[start])) start++;
  while (end > start && PY_SPACE_CHAR.test(text[end - 1])) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

/**
 * LangBot's `_strip_think`: a leading orphan `</think>` and what precedes it go (with the whitespace
 * after it), then every `<think>…</think>` block (the whitespace around it stays), then the whole
 * text is stripped. An unclosed `<think>` stays.
 */
export function stripThink(text: string): string {
  if (!text) return text;
  // Without a closing tag neither pattern can match.
  if (!text.includes(CLOSE)) return pyStrip(text);
  return pyStrip(text.replace(LEADING_ORPHAN, '').replace(BLOCK, ''));
}

/** A non-streamed answer (LangBot `_process_thinking_content`). */
export function withReasoning(content: string, reasoning: string | undefined, removeThink: boolean): string {
  if (removeThink) return stripThink(content);
  return reasoning ? pyStrip(`<think>\n${reasoning}\n</think>\n${content}`) : content;
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag` (a tag split across deltas). */
function partialTagSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (tag.startsWith(text.slice(text.length - n))) return n;
  return 0;
}

/**
 * LangBot's `_ThinkStripState`: removes think blocks from streamed text whose tags may be split across
 * deltas. Until the answer shows something (text before a `<think>`, or a block that closed), nothing
 * is let through: a `</think>` may still come that hides everything before it (the model began
 * thinking before its first delta). Text that could be the start of a tag is held back until the
 * next delta decides it; `flush` releases what is held, except an unclosed block.
 */
export class ThinkStripper {
  private buf = '';
  private inThink = false;
  private pendingInitial = true;
  /** Where a tag may start in `buf` held while pending: the text before it was searched already. */
  private searchedTo = 0;

  push(delta: string): string {
    if (!delta) return delta;
    const text = this.buf + delta;
    const from = this.searchedTo;
    this.buf = '';
    this.searchedTo = 0;
    return this.inThink ? this.consumeThinkBody(text) : this.processVisible(text, from);
  }

  flush(): string {
    const rest = this.inThink ? '' : this.buf;
    this.buf = '';
    this.searchedTo = 0;
    this.inThink = false;
    return rest;
  }

  private consumeThinkBody(text: string): string {
    const close = text.indexOf(CLOSE);
    if (close < 0) {
      this.buf = text.slice(text.length - partialTagSuffix(text, CLOSE));
      return '';
    }
    this.inThink = false;
    this.pendingInitial = false;
    return this.processVisible(text.slice(close + CLOSE.length), 0);
  }

  private processVisible(text: string, searchFrom: number): string {
    let out = '';
    let index = 0;
    while (index < text.length) {
      if (this.pendingInitial) {
        const from = Math.max(index, searchFrom);
        const open = text.indexOf(OPEN, from);
        const orphan = text.indexOf(CLOSE, from);
        if (orphan >= 0 && (open < 0 || orphan < open)) {
          this.pendingInitial = false;
          index = orphan + CLOSE.length;
          continue;
        }
        if (open < 0) {
          this.buf = text.slice(index);
          // Neither tag is in what is held; the next search starts where a tag could still begin.
          this.searchedTo = Math.max(0, this.buf.length - (CLOSE.length - 1));
          return out;
        }
        if (open > index) {
          this.pendingInitial = false;
          out += text.slice(index, open);
          index = open;
          continue;
        }
      }
      const open = text.indexOf(OPEN, index);
      if (open < 0) {
        const end = text.length - partialTagSuffix(text.slice(index), OPEN);
        out += text.slice(index, end);
        if (end > index) this.pendingInitial = false;
        this.buf = text.slice(end);
        return out;
      }
      out += text.slice(index, open);
      if (open > index) this.pendingInitial = false;
      const bodyStart = open + OPEN.length;
      const close = text.indexOf(CLOSE, bodyStart);
      if (close < 0) {
        this.inThink = true;
        const body = text.slice(bodyStart);
        this.buf = body.slice(body.length - partialTagSuffix(body, CLOSE));
        return out;
      }
      this.pendingInitial = false;
      index = close + CLOSE.length;
    }
    return out;
  }
}
