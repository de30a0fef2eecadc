import type { ContentPart, LlmMessage, MessageComponent } from '@conveyor/contracts';

/**
 * How a Voice or File component reaches the model: as text naming it, never as its bytes. LangBot
 * turns them into `file_base64`/`file_url` content elements (a voice is named `voice.silk` when it has
 * base64, `voice` when it has a URL) and, without its sandbox, drops those elements from the model
 * request because chat providers refuse non-image file parts. The text is the element's own readable
 * form in LangBot (`[File](<name>)`), so the model knows something was sent and what it is called.
 * The URL is left out: platform file URLs often carry access tokens, and the model cannot open it.
 * A component with neither base64 nor URL yields nothing, as in LangBot.
 */
export function describeAttachment(c: Extract<MessageComponent, { type: 'Voice' | 'File' }>): string | null {
  if (!c.base64 && !c.url) return null;
  const name = c.type === 'Voice' ? (c.base64 ? 'voice.silk' : 'voice') : c.name;
  return `[File](${name})`;
}

/** The `image_url` an Image component becomes: its base64 as a data URL (LangBot's form), else its URL. */
export function imageUrlOf(c: Extract<MessageComponent, { type: 'Image' }>): string {
  if (c.base64) return c.base64.startsWith('data:') ? c.base64 : `data:image/png;base64,${c.base64}`;
  return c.url;
}

/**
 * The user's turn from the chain, as LangBot's PreProcessor builds it. Images only when the model can
 * see (a URL image is fetched and inlined by the runner right before the model call); Voice and File as
 * text naming them; At, Source and the like are dropped.
 */
export function buildUserMessage(chain: readonly MessageComponent[], opts: { vision: boolean; combineQuote: boolean }): { message: LlmMessage; text: string } {
  const parts: ContentPart[] = [];
  let text = '';
  const add = (c: MessageComponent, quoted: boolean) => {
    if (c.type === 'Plain') {
      parts.push({ type: 'text', text: c.text });
      if (!quoted) text += c.text;
    } else if (c.type === 'Image' && opts.vision) {
      const url = imageUrlOf(c);
      // LangBot adds an empty base64 element for URL-less images; an empty part would break the next turn.
      if (url) parts.push({ type: 'image_url', image_url: { url } });
    } else if (c.type === 'Voice' || c.type === 'File') {
      const description = describeAttachment(c);
      if (description !== null) parts.push({ type: 'text', text: description });
    }
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
