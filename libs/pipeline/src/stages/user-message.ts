import type { ContentPart, LlmMessage, MessageComponent } from '@conveyor/contracts';

/** The user's turn from the chain (spec 8.4 step 9). Images only when the model can see; At, Source and the like are dropped. */
export function buildUserMessage(chain: readonly MessageComponent[], opts: { vision: boolean; combineQuote: boolean }): { message: LlmMessage; text: string } {
  const parts: ContentPart[] = [];
  let text = '';
  const add = (c: MessageComponent, quoted: boolean) => {
    if (c.type === 'Plain') {
      parts.push({ type: 'text', text: c.text });
      if (!quoted) text += c.text;
    } else if (c.type === 'Image' && opts.vision) {
      const url = c.base64 ? (c.base64.startsWith('data:') ? c.base64 : `data:image/png;base64,${c.base64}`) : c.url;
      // LangBot adds an empty base64 element for URL-less images; an empty part would break the next turn.
      if (url) parts.push({ type: 'image_url', image_url: { url } });
    }
    // Voice and File: the run request's content parts have no file type; they are not forwarded.
  };
  for (const c of chain) {
    if (c.type === 'Quote') {
      if (opts.combineQuote) for (const o of c.origin) add(o, true);
    } else add(c, false);
  }
  // One text part is sent as a plain string, the shape chat models and history expect most.
  const content = parts.length === 1 && parts[0].type === 'text' ? parts[0].text : parts.length === 0 ? '' : parts;
  return { message: { role: 'user', content }, text };
}

/** Image parts a text-only model cannot take, and emptied binary parts, leave this turn's copy of history. */
export function pruneHistory(history: readonly LlmMessage[], vision: boolean): LlmMessage[] {
  return history.map((m) => {
    if (!Array.isArray(m.content)) return m;
    const kept = m.content.filter((p) => p.type === 'text' || (vision && p.image_url.url !== ''));
    return kept.length === m.content.length ? m : { ...m, content: kept.length ? kept : '' };
  });
}
