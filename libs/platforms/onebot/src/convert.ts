import type { MessageChain, MessageComponent } from '@conveyor/contracts';
import type { Segment } from './parse.js';

export interface InboundContext {
  /** The OneBot message id, kept as the chain's Source. */
  messageId: string;
  /** Unix seconds of the event. */
  time: number;
  /** The bot's own QQ number: an `at` of it becomes an At of `botAccountId`, which the at-bot rule looks for. */
  selfId: string;
  botAccountId: string;
  /** Reads a quoted message (OneBot `get_msg`); null when it cannot be read. */
  getMessage?: (messageId: string) => Promise<{ senderId: string | null; segments: Segment[] } | null>;
}

const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** LangBot's readable form of a JSON card (`[app] preview title url`). */
function jsonCardText(raw: unknown): string {
  const fallback = '[收到一张JSON卡片]';
  try {
    const card: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
    if (typeof card !== 'object' || card === null) return str(raw) || fallback;
    const c = card as { app?: unknown; meta?: Record<string, unknown> };
    const meta = c.meta && typeof c.meta === 'object' ? c.meta : {};
    const detail = (meta.detail_1 ?? meta.music ?? meta.news ?? {}) as Record<string, unknown>;
    const parts = [`[${str(c.app)}]`, str(detail.preview), str(detail.desc) || str(detail.title), str(detail.qqdocurl) || str(detail.jumpUrl)];
    return parts.join(' ').trim() || fallback;
  } catch {
    return fallback;
  }
}

/** One segment as a component, without resolving replies (quoted messages are one level deep). */
function segmentToComponent(seg: Segment, ctx: Pick<InboundContext, 'selfId' | 'botAccountId'>): MessageComponent | null {
  const d = seg.data;
  switch (seg.type) {
    case 'text':
      return { type: 'Plain', text: str(d.text) };
    case 'at': {
      const qq = str(d.qq);
      if (qq === 'all') return { type: 'AtAll' };
      return { type: 'At', target: qq === ctx.selfId ? ctx.botAccountId : qq, display: str(d.name) };
    }
    case 'image':
      // A sticker is a picture of a face, not a photo to look at (LangBot: Face).
      if (d.emoji_package_id) return { type: 'Unknown', text: `[${str(d.summary) || '表情'}]` };
      return { type: 'Image', image_id: str(d.file), url: str(d.url), path: '', base64: '' };
    case 'record':
      return { type: 'Voice', voice_id: str(d.file), url: str(d.url), path: '', base64: '', length: 0 };
    case 'file':
      return { type: 'File', id: str(d.file_id), name: str(d.name) || str(d.file), size: Number(d.file_size) || 0, url: str(d.url), path: '', base64: '' };
    case 'face': {
      const raw = d.raw && typeof d.raw === 'object' ? (d.raw as { faceText?: unknown }).faceText : undefined;
      return { type: 'Unknown', text: `[${str(raw).replace(/\//g, '') || `表情${str(d.id)}`}]` };
    }
    case 'json':
      return { type: 'Plain', text: jsonCardText(d.data) };
    case 'reply':
    case 'forward':
      return null;
    default:
      return { type: 'Unknown', text: `[${seg.type}]` };
  }
}

/**
 * A OneBot message (segments) as LangBot's message chain, as LangBot's aiocqhttp adapter builds it:
 * a Source first, `at all` → AtAll, a `reply` → a Quote of the quoted message (read with get_msg),
 * images by URL (the runner reads them when the model needs them).
 */
export async function segmentsToChain(segments: readonly Segment[], ctx: InboundContext): Promise<MessageChain> {
  const chain: MessageChain = [{ type: 'Source', id: ctx.messageId, timestamp: ctx.time }];
  for (const seg of segments) {
    if (seg.type === 'reply') {
      const id = str(seg.data.id);
      const quoted = id && ctx.getMessage ? await ctx.getMessage(id).catch(() => null) : null;
      const origin = (quoted?.segments ?? []).map((s) => segmentToComponent(s, ctx)).filter((c): c is MessageComponent => c !== null);
      chain.push({ type: 'Quote', id: id || null, group_id: null, sender_id: quoted?.senderId ?? null, target_id: null, origin });
      continue;
    }
    const c = segmentToComponent(seg, ctx);
    if (c) chain.push(c);
  }
  return chain;
}

/** LangBot sends base64 as `base64://<payload>`, whether the chain held a bare payload or a data URL. */
function base64File(value: string): string {
  const payload = value.startsWith('base64://') ? value.slice('base64://'.length) : value.startsWith('data:') && value.includes(';base64,') ? value.split(';base64,', 2)[1] : value;
  return `base64://${payload}`;
}

/** A reply chain as OneBot segments (LangBot's `yiri2target`). Source and empty components are left out. */
export function chainToSegments(chain: readonly MessageComponent[]): Segment[] {
  const out: Segment[] = [];
  for (const c of chain) {
    switch (c.type) {
      case 'Plain':
        if (c.text) out.push({ type: 'text', data: { text: c.text } });
        break;
      case 'At':
        out.push({ type: 'at', data: { qq: String(c.target) } });
        break;
      case 'AtAll':
        out.push({ type: 'at', data: { qq: 'all' } });
        break;
      case 'Image': {
        const file = c.base64 ? base64File(c.base64) : c.url || c.path;
        if (file) out.push({ type: 'image', data: { file } });
        break;
      }
      case 'Voice': {
        const file = c.base64 ? base64File(c.base64) : c.url || c.path;
        if (file) out.push({ type: 'record', data: { file } });
        break;
      }
      case 'File': {
        const file = c.url || c.path || (c.base64 ? base64File(c.base64) : '');
        if (file) out.push({ type: 'file', data: { file, name: c.name } });
        break;
      }
      case 'Quote':
        if (c.id !== null) out.push({ type: 'reply', data: { id: String(c.id) } });
        break;
      case 'Forward':
        // OneBot v11 has no forward in a plain send: the nodes' contents go out in order (LangBot).
        for (const node of c.node_list) out.push(...chainToSegments(node.message_chain));
        break;
      case 'Unknown':
        if (c.text) out.push({ type: 'text', data: { text: c.text } });
        break;
      case 'Source':
        break;
    }
  }
  return out;
}
