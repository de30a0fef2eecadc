import { XMLParser } from 'fast-xml-parser';
import { z } from 'zod';
import { storableChain, storableText, type MessageComponent } from '@conveyor/contracts';

/**
 * Values stay strings (a MsgId is a 64-bit number; read as a JS number it would lose digits). XML's
 * own entities (`&amp;`, `&lt;`) are decoded; no DOCTYPE is accepted (see `parseXmlFields`), so no
 * declared entity can expand.
 */
const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: false, processEntities: true, htmlEntities: false });

/** `<xml>`'s child elements as strings; one that is not a single text leaf (nested, repeated) is left out. */
export function parseXmlFields(xml: string): { ok: true; fields: Record<string, string> } | { ok: false; error: string } {
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) return { ok: false, error: 'a DOCTYPE is not accepted' };
  let doc: unknown;
  try {
    doc = parser.parse(xml, true);
  } catch (err) {
    return { ok: false, error: `not well-formed XML (${err instanceof Error ? err.message.split('\n')[0] : 'parse error'})` };
  }
  const root = z.object({ xml: z.record(z.string(), z.unknown()) }).safeParse(doc);
  if (!root.success) return { ok: false, error: 'the root element is not <xml>' };
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(root.data.xml)) if (typeof value === 'string') fields[name] = value;
  return { ok: true, fields };
}

/** The callback body WeCom POSTs: the corp (or app) it is for, and the encrypted message. */
export const EncryptedEnvelope = z.object({
  ToUserName: z.string().max(200).optional(),
  AgentID: z.string().max(50).optional(),
  Encrypt: z.string().min(1, 'Encrypt is empty'),
});

/** A numeric field kept as a string (a MsgId is 64-bit: as a JS number it would lose digits). */
export const digits = (what: string) => z.string().regex(/^\d{1,20}$/, `${what} must be a number`);
/** WeCom user ids: letters, digits and `_-.@` (up to 64); bounded loosely so a change does not drop messages. */
const UserId = z.string().regex(/^[\w.@-]{1,128}$/, 'a WeCom user id');

const Common = z.object({
  ToUserName: z.string().min(1).max(200),
  FromUserName: UserId,
  CreateTime: digits('CreateTime'),
  MsgId: digits('MsgId'),
  AgentID: digits('AgentID'),
});
/** One WeCom app message as a query needs it (WeCom app messages are 1:1 between a member and the app). */
export interface WecomInbound {
  msgId: string;
  userId: string;
  agentId: string;
  createTime: number;
  messageChain: MessageComponent[];
}

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || 'xml'}: ${i.message}`).join('; ');

/**
 * A WeChat-family message's XML (WeCom app, Official Account) as LangBot's adapters read it: `text`
 * becomes its text, `image` an image by its URL; other types (voice, video, location, link) and
 * events (subscribe, enter_agent) are skipped (`message: null`). `common` is the platform's schema
 * of the fields every message has (sender, MsgId); a text or image message that does not parse is
 * malformed.
 */
export function parseWechatFamilyMessage<S extends z.ZodRawShape>(
  xml: string,
  common: z.ZodObject<S>,
): { ok: true; message: { fields: z.output<z.ZodObject<S>>; messageChain: MessageComponent[] } | null; skipped?: string } | { ok: false; error: string } {
  const parsed = parseXmlFields(xml);
  if (!parsed.ok) return parsed;
  const type = parsed.fields['MsgType'];
  if (type === undefined) return { ok: false, error: 'MsgType: missing' };
  if (type !== 'text' && type !== 'image') {
    const event = parsed.fields['Event'];
    return { ok: true, message: null, skipped: `MsgType ${type.slice(0, 40)}${event ? ` (${event.slice(0, 40)})` : ''}` };
  }
  const base = common.safeParse(parsed.fields);
  if (!base.success) return { ok: false, error: issues(base.error) };
  let chain: MessageComponent[];
  if (type === 'text') {
    const content = TextFields.safeParse(parsed.fields);
    if (!content.success) return { ok: false, error: issues(content.error) };
    const text = storableText(content.data.Content);
    if (!text.trim()) return { ok: true, message: null, skipped: 'empty text' };
    chain = [{ type: 'Plain', text }];
  } else {
    const image = ImageFields.safeParse(parsed.fields);
    if (!image.success) return { ok: false, error: issues(image.error) };
    chain = [{ type: 'Image', image_id: image.data.MediaId, url: image.data.PicUrl, path: '', base64: '' }];
  }
  return { ok: true, message: { fields: base.data, messageChain: storableChain(chain) } };
}

const TextFields = z.object({ Content: z.string() });
const ImageFields = z.object({ PicUrl: z.string().max(2000).default(''), MediaId: z.string().max(500).default('') });

/** A WeCom app message (see `parseWechatFamilyMessage`), its agent and member. */
export function parseWecomMessage(xml: string): { ok: true; message: WecomInbound | null; skipped?: string } | { ok: false; error: string } {
  const r = parseWechatFamilyMessage(xml, Common);
  if (!r.ok) return r;
  if (!r.message) return { ok: true, message: null, ...(r.skipped !== undefined ? { skipped: r.skipped } : {}) };
  const d = r.message.fields;
  return { ok: true, message: { msgId: d.MsgId, userId: d.FromUserName, agentId: d.AgentID, createTime: Number(d.CreateTime), messageChain: r.message.messageChain } };
}

/**
 * A query's `replyTo` for WeCom: the app (agent) the member wrote to and the message id. Replies go
 * out through that agent, as LangBot's adapter sends with the event's AgentID.
 */
export function wecomReplyTo(agentId: string, msgId: string): string {
  return `${agentId}:${msgId}`;
}

/** The agent id a `replyTo` carries, or undefined when it is not one of ours. */
export function agentIdOf(replyTo: string): number | undefined {
  const m = /^(\d{1,20}):/.exec(replyTo);
  return m ? Number(m[1]) : undefined;
}
