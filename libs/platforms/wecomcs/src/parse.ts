import { z } from 'zod';
import { storableChain, storableText, type MessageComponent } from '@conveyor/contracts';
import { pendingImage } from '@conveyor/platform-kit';
import { ApiAnswer, parseXmlFields } from '@conveyor/wecom';

/** `origin` of a message sent by the WeChat customer (3); 4 is a system event, 5 a servicer's message. */
export const FROM_CUSTOMER = 3;

/** The decrypted callback: "messages or events wait" for an account, with the token to pull them with. */
const KfEvent = z.object({
  MsgType: z.literal('event'),
  Event: z.literal('kf_msg_or_event'),
  Token: z.string().min(1).max(200),
  OpenKfId: z.string().regex(/^[\w-]{1,100}$/, 'OpenKfId is an account id'),
});
export type KfEvent = z.output<typeof KfEvent>;

/** The callback's event, or why it is none (another event is skipped: `event: null`). */
export function parseKfEvent(xml: string): { ok: true; event: KfEvent | null; skipped?: string } | { ok: false; error: string } {
  const parsed = parseXmlFields(xml);
  if (!parsed.ok) return parsed;
  const { MsgType: type, Event: event } = parsed.fields;
  if (type !== 'event' || event !== 'kf_msg_or_event') return { ok: true, event: null, skipped: `MsgType ${String(type).slice(0, 40)}${event ? ` (${event.slice(0, 40)})` : ''}` };
  const e = KfEvent.safeParse(parsed.fields);
  if (!e.success) return { ok: false, error: e.error.issues.map((i) => `${i.path.join('.') || 'xml'}: ${i.message}`).join('; ') };
  return { ok: true, event: e.data };
}

const KfMessage = z
  .object({
    msgid: z.string().min(1).max(200),
    open_kfid: z.string().min(1).max(100),
    external_userid: z.string().max(200).default(''),
    send_time: z.number().int().nonnegative(),
    origin: z.number().int(),
    msgtype: z.string().max(50),
    text: z.object({ content: z.string() }).loose().optional(),
    image: z.object({ media_id: z.string().min(1).max(500) }).loose().optional(),
  })
  .loose();
export type KfMessage = z.output<typeof KfMessage>;

/** `kf/sync_msg`'s answer; the messages are read one by one, so one that does not parse is skipped, not the page. */
export const SyncMsgAnswer = ApiAnswer.extend({
  next_cursor: z.string().max(500).default(''),
  has_more: z.number().int().default(0),
  msg_list: z.array(z.unknown()).max(1000).default([]),
});

/** One customer message as a query needs it. */
export interface KfInbound {
  msgId: string;
  openKfId: string;
  customerId: string;
  sendTime: number;
  /** An image is pending by its temporary media id: the puller downloads it with the access token. */
  messageChain: MessageComponent[];
}

/**
 * A `msg_list` entry as LangBot's wecomcs adapter reads it: a customer's (`origin` 3) text becomes
 * its text, an image its media id to download; other types (voice, file), events and servicers'
 * messages are skipped with the reason.
 */
export function readKfMessage(raw: unknown): { message: KfInbound } | { skipped: string } {
  const m = KfMessage.safeParse(raw);
  if (!m.success) return { skipped: `malformed: ${m.error.issues.map((i) => i.path.join('.')).join(', ')}` };
  const d = m.data;
  if (d.origin !== FROM_CUSTOMER) return { skipped: `origin ${d.origin}` };
  if (!d.external_userid) return { skipped: 'no external_userid' };
  const common = { msgId: d.msgid, openKfId: d.open_kfid, customerId: d.external_userid, sendTime: d.send_time };
  if (d.msgtype === 'image' && d.image) return { message: { ...common, messageChain: [pendingImage(d.image.media_id)] } };
  if (d.msgtype !== 'text' || !d.text) return { skipped: `msgtype ${d.msgtype}` };
  const text = storableText(d.text.content);
  if (!text.trim()) return { skipped: 'empty text' };
  return { message: { ...common, messageChain: storableChain([{ type: 'Plain', text }]) } };
}

/** A query's `replyTo`: the account the customer wrote to and the message id (send_msg needs the account). */
export function kfReplyTo(openKfId: string, msgId: string): string {
  return `${openKfId}:${msgId}`;
}

/** The account a `replyTo` names, or undefined when it is not one of ours. */
export function openKfIdOf(replyTo: string): string | undefined {
  const m = /^([\w-]{1,100}):/.exec(replyTo);
  return m?.[1];
}
