import type { ContentPart, LlmMessage } from '@conveyor/contracts';

/** A history text is cut to no fewer characters than this; past that, whole rounds go. */
const MIN_KEPT_CHARS = 1_000;

// ASCII only: a note's JSON length in characters is its length in bytes.
const IMAGE_LEFT_OUT = '[image left out: the conversation was over the bus bound]';
const cutNote = (chars: number) => `\n[... ${chars} characters cut: the conversation was over the bus bound]`;

/** What a message adds to the run request's `messages` array, as UTF-8 JSON (its comma included). */
function encodedBytes(message: LlmMessage): number {
  return Buffer.byteLength(JSON.stringify(message)) + 1;
}

/**
 * An upper bound of a JSON value's UTF-8 size, without building the JSON: a UTF-16 unit takes at most
 * 6 bytes (`\u0000`), a number at most 24 characters, plus quotes, commas, colons and brackets.
 */
export function jsonBytesAtMost(value: unknown): number {
  if (typeof value === 'string') return 6 * value.length + 2;
  if (typeof value === 'number') return 24;
  if (value === null || typeof value !== 'object') return 5;
  let n = 2;
  if (Array.isArray(value)) {
    for (const item of value) n += jsonBytesAtMost(item) + 1;
    return n;
  }
  for (const [key, item] of Object.entries(value)) n += 6 * key.length + 4 + jsonBytesAtMost(item);
  return n;
}

/** The text cut to at most `keep` characters with a note saying so (keeping at least MIN_KEPT_CHARS, never splitting a surrogate pair). */
function cutText(text: string, keep: number): string {
  // The note's bytes in JSON (its newline is escaped), at its longest.
  let end = Math.max(MIN_KEPT_CHARS, keep - (JSON.stringify(cutNote(text.length)).length - 2));
  if (end >= text.length) return text;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}${cutNote(text.length - end)}`;
}

/**
 * The message with about `excess` characters fewer: its longest texts cut from the end, its largest
 * images left out. Removing n UTF-16 units from a text removes at least n bytes of its JSON.
 */
function shrink(message: LlmMessage, excess: number): LlmMessage {
  if (typeof message.content === 'string') return { ...message, content: cutText(message.content, message.content.length - excess) };
  if (!Array.isArray(message.content)) return message;
  const parts: ContentPart[] = [...message.content];
  const length = (p: ContentPart) => (p.type === 'text' ? p.text.length : p.image_url.url.length);
  const largestFirst = parts.map((p, i) => ({ i, n: length(p) })).sort((a, b) => b.n - a.n);
  let over = excess;
  for (const { i, n } of largestFirst) {
    if (over <= 0) break;
    const part = parts[i];
    const next: ContentPart = part.type === 'text' ? { type: 'text', text: cutText(part.text, part.text.length - over) } : { type: 'text', text: IMAGE_LEFT_OUT };
    over -= n - length(next);
    parts[i] = next;
  }
  return { ...message, content: parts };
}

/**
 * The history within `budgetBytes` of run request (what is left of the bus bound once the prompt, the
 * user's turn and the routing are counted). History has no bound of its own: one tool result or model
 * answer of megabytes would put every later run request of the conversation over the bus bound, and
 * each of the chat's next messages would fail. So, when it is over: the largest messages are cut first
 * (their texts keep their start and say what was cut; images give way to a note), as far as that goes;
 * then whole rounds go, oldest first, as the round truncator drops them. Returns `history` itself when
 * it fits.
 */
export function fitHistory(history: LlmMessage[], budgetBytes: number): LlmMessage[] {
  // Every message goes through here: the common case is decided without serialising the history
  // (the publish does that once), and only a history that may be over is measured exactly.
  if (jsonBytesAtMost(history) <= budgetBytes) return history;
  // `[a,b]` is one byte more than what a and b add to the request.
  if (Buffer.byteLength(JSON.stringify(history)) - 1 <= budgetBytes) return history;
  const kept = [...history];
  const sizes = kept.map(encodedBytes);
  let total = sizes.reduce((sum, n) => sum + n, 0);
  const largestFirst = sizes.map((n, i) => ({ n, i })).sort((a, b) => b.n - a.n);
  for (const { i } of largestFirst) {
    if (total <= budgetBytes) break;
    kept[i] = shrink(kept[i], total - budgetBytes);
    const size = encodedBytes(kept[i]);
    total += size - sizes[i];
    sizes[i] = size;
  }
  let start = 0;
  while (total > budgetBytes && start < kept.length) {
    // Up to the next user message: the round's assistant and tool messages go with it.
    let end = start + 1;
    while (end < kept.length && kept[end].role !== 'user') end++;
    for (let i = start; i < end; i++) total -= sizes[i];
    start = end;
  }
  return kept.slice(start);
}
