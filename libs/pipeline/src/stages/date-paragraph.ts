import type { LlmMessage } from '@conveyor/contracts';

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** The date grounding text LangBot's PreProcessor adds to the system prompt, in local server time. */
export function dateParagraph(now: Date): string {
  const d = `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}-${String(now.getDate()).padStart(2, '0')}`;
  return (
    `\n\nCurrent date: ${d} (${WEEKDAYS[now.getDay()]}). Resolve relative time references (e.g. "today", "this quarter", "latest", ` +
    `"currently") based on this date, not your training cutoff. For anything time-sensitive that may have changed since training \u2014 ` +
    `stock prices, financial results, news, current events, exchange rates, or similar \u2014 verify with a search tool if one is ` +
    `available rather than answering from memory.`
  );
}

/**
 * A new prompt list with the paragraph on the first system message; the stored preset is never touched
 * (LangBot appends to the stored system message through a shallow copy, so the line piles up turn after turn).
 */
export function withDateParagraph(prompt: readonly LlmMessage[], now: Date): LlmMessage[] {
  const text = dateParagraph(now);
  const out = prompt.map((m) => ({ ...m }));
  const first = out[0];
  if (!first || first.role !== 'system') return [{ role: 'system', content: text }, ...out];
  if (typeof first.content === 'string' || first.content === null) {
    first.content = (first.content ?? '') + text;
  } else {
    const parts = first.content.map((p) => ({ ...p }));
    const t = parts.find((p) => p.type === 'text');
    if (t && t.type === 'text') t.text += text;
    else parts.push({ type: 'text', text });
    first.content = parts;
  }
  return out;
}
