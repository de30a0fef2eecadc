import type { MessageChain, MessageComponent } from '@conveyor/contracts';
import { chainToMessageText } from '@conveyor/platform-kit';

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Satori's text escaping: `&`, `<`, `>`, `"` as entities. */
export function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function unescapeText(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|#(\d{1,7})|#x([0-9a-f]{1,6}));/gi, (m, name: string, dec?: string, hex?: string) => {
    const code = dec !== undefined ? Number(dec) : hex !== undefined ? parseInt(hex, 16) : undefined;
    if (code !== undefined) return code <= 0x10ffff ? String.fromCodePoint(code) : m;
    return ENTITIES[name.toLowerCase()] ?? m;
  });
}

const ELEMENT = /<(\/?)([a-z][\w:-]{0,40})((?:\s+[\w:-]{1,40}(?:="[^"]{0,10000}")?)*)\s*(\/?)>/gi;
const ATTR = /([\w:-]{1,40})(?:="([^"]*)")?/g;

function attrsOf(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of raw.matchAll(ATTR)) out[m[1]] = unescapeText(m[2] ?? '');
  return out;
}

/**
 * Satori message content as LangBot's chain: text (unescaped) as Plain, `<at id>` as At (the bot's own
 * login → At of the Conveyor bot id, which the at-bot rule looks for), `<at type="all"/>` as AtAll,
 * `<img src>` as Image, `<file src>`/`<audio src>`/`<video src>` as File; other elements keep their
 * text. A `<quote>` element (the message replied to) is left out with everything inside it.
 */
export function contentToChain(content: string, selfId: string, botId: string): MessageChain {
  const chain: MessageChain = [];
  let at = 0;
  let quoteDepth = 0;
  const text = (s: string) => {
    if (quoteDepth > 0 || !s) return;
    const last = chain.at(-1);
    const t = unescapeText(s);
    if (last?.type === 'Plain') last.text += t;
    else chain.push({ type: 'Plain', text: t });
  };
  for (const m of content.matchAll(ELEMENT)) {
    text(content.slice(at, m.index));
    at = m.index + m[0].length;
    const [, closing, tag, rawAttrs, selfClosing] = m;
    const name = tag.toLowerCase();
    if (name === 'quote') {
      if (closing) quoteDepth = Math.max(0, quoteDepth - 1);
      else if (!selfClosing) quoteDepth++;
      continue;
    }
    if (closing || quoteDepth > 0) continue;
    const a = attrsOf(rawAttrs);
    if (name === 'at') {
      if (a.type === 'all' || a.type === 'here') chain.push({ type: 'AtAll' });
      else if (a.id) chain.push({ type: 'At', target: a.id === selfId ? botId : a.id, display: a.name ?? '' });
    } else if ((name === 'img' || name === 'image') && a.src) chain.push({ type: 'Image', image_id: '', url: a.src, path: '', base64: '' });
    else if ((name === 'file' || name === 'audio' || name === 'video') && a.src) chain.push({ type: 'File', id: '', name: a.title ?? '', size: 0, url: a.src, path: '', base64: '' });
  }
  text(content.slice(at));
  return chain;
}

/** A reply chain as Satori content: text escaped, At → `<at id/>`, AtAll → `<at type="all"/>`, media by URL. */
export function chainToContent(chain: readonly MessageComponent[]): string {
  const escaped = chain.map((c) => (c.type === 'Plain' ? { ...c, text: escapeText(c.text) } : c));
  return chainToMessageText(escaped, { at: (id) => `<at id="${escapeText(id)}"/>`, atAll: '<at type="all"/>' });
}
