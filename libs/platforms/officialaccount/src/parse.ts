import { z } from 'zod';
import type { MessageComponent } from '@conveyor/contracts';
import { digits, parseWechatFamilyMessage } from '@conveyor/wecom';

/** An OpenID: the follower's id within this account (28 characters today; bounded loosely). */
const OpenId = z.string().regex(/^[\w-]{1,128}$/, 'an OpenID');

const Common = z.object({
  /** The account's original id (gh_…). */
  ToUserName: z.string().min(1).max(200),
  FromUserName: OpenId,
  CreateTime: digits('CreateTime'),
  MsgId: digits('MsgId'),
});

/** One follower's message as a query needs it (Official Account messages are 1:1). */
export interface OfficialAccountInbound {
  msgId: string;
  openId: string;
  /** The account's original id: the passive reply's `FromUserName`. */
  accountId: string;
  messageChain: MessageComponent[];
}

/** A follower's message (plain, or decrypted), read as `parseWechatFamilyMessage` reads one. */
export function parseOfficialAccountMessage(xml: string): { ok: true; message: OfficialAccountInbound | null; skipped?: string } | { ok: false; error: string } {
  const r = parseWechatFamilyMessage(xml, Common);
  if (!r.ok) return r;
  if (!r.message) return { ok: true, message: null, ...(r.skipped !== undefined ? { skipped: r.skipped } : {}) };
  const d = r.message.fields;
  return { ok: true, message: { msgId: d.MsgId, openId: d.FromUserName, accountId: d.ToUserName, messageChain: r.message.messageChain } };
}

/** Text as one CDATA section (a `]]>` inside it is split across two, as XML allows no other escape there). */
export function cdata(text: string): string {
  return `<![CDATA[${text.replaceAll(']]>', ']]]]><![CDATA[>')}]]>`;
}

/** The passive text reply to a follower's message (`FromUserName` is the account). */
export function passiveTextXml(m: { openId: string; accountId: string; content: string; createTime: number }): string {
  return `<xml><ToUserName>${cdata(m.openId)}</ToUserName><FromUserName>${cdata(m.accountId)}</FromUserName><CreateTime>${m.createTime}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content>${cdata(m.content)}</Content></xml>`;
}
