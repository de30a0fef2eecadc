import { z } from 'zod';
import { LIMITS, storableChain, storableText, type MessageComponent } from '@conveyor/contracts';
import { pendingImage, resolvePendingImages, type InboundQuery } from '@conveyor/platform-kit';
import type { DingtalkConfig } from './config.js';

/** DingTalk's ids (staff ids, `$:LWCP_v1:$…` user ids, `cid…` conversation ids, msgIds) are short; bounded loosely. */
const Id = z.string().min(1).max(256);
const Code = z.string().max(2_000);

const AtUser = z.looseObject({ dingtalkId: z.string().max(256).optional(), staffId: z.string().max(256).optional() });

/**
 * `content` of a picture, audio, file or rich text message. DingTalk sends it as an object; some
 * SDKs relay it as a JSON string, which is read the same way.
 */
const Content = z.looseObject({
  downloadCode: Code.optional(),
  pictureDownloadCode: Code.optional(),
  recognition: z.string().max(100_000).optional(),
  fileName: z.string().max(1_000).optional(),
  richText: z.array(z.looseObject({ text: z.string().max(1_000_000).optional(), type: z.string().max(50).optional(), downloadCode: Code.optional() })).max(1_000).optional(),
});
const ContentField = z.union([Content, z.string().max(1_000_000).transform((s, ctx) => {
  try {
    return Content.parse(JSON.parse(s));
  } catch {
    ctx.addIssue({ code: 'custom', message: 'content is neither an object nor its JSON' });
    return z.NEVER;
  }
})]);

/**
 * A robot message as DingTalk delivers it, in an HTTP callback's body and in a Stream mode
 * CALLBACK frame's `data` alike (topic `/v1.0/im/bot/messages/get`).
 */
export const RobotMessage = z.looseObject({
  msgId: Id,
  msgtype: z.string().min(1).max(50),
  conversationType: z.enum(['1', '2'], { error: 'conversationType: "1" (private) or "2" (group)' }),
  conversationId: Id,
  conversationTitle: z.string().max(LIMITS.nameChars).optional(),
  senderId: Id,
  senderStaffId: z.string().max(256).optional(),
  senderNick: z.string().max(LIMITS.nameChars).default(''),
  chatbotUserId: z.string().max(256).default(''),
  robotCode: z.string().max(256).optional(),
  isInAtList: z.boolean().optional(),
  atUsers: z.array(AtUser).max(1_000).default([]),
  sessionWebhook: z.string().max(2_000).optional(),
  sessionWebhookExpiredTime: z.number().int().nonnegative().optional(),
  createAt: z.number().int().nonnegative().optional(),
  text: z.looseObject({ content: z.string().max(1_000_000) }).optional(),
  content: ContentField.optional(),
});
export type RobotMessage = z.output<typeof RobotMessage>;

export type ParsedMessage =
  | { ok: true; query: InboundQuery; ref: { msgId: string } }
  | { ok: true; query: null; skipped: string; ref: { msgId: string } }
  | { ok: false; error: string };

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');

/** Where DingTalk's session webhooks live. */
const SESSION_WEBHOOK_ORIGIN = 'https://oapi.dingtalk.com';

/**
 * Whether replies may be POSTed to this session webhook: DingTalk's own host, or the bot's API base
 * (a proxy, or a fake in tests). An HTTP callback's sign covers only its timestamp, not its body, so a
 * captured sign could carry a body naming any URL; the answer must not go there.
 */
export function isDingtalkWebhook(url: string, apiBaseUrl: string): boolean {
  if (!/^https?:\/\/\S+$/.test(url)) return false;
  try {
    const origin = new URL(url).origin;
    return origin === SESSION_WEBHOOK_ORIGIN || origin === new URL(apiBaseUrl).origin;
  } catch {
    return false;
  }
}

/**
 * Where a reply goes while DingTalk lets the bot answer in the conversation: the message's
 * `sessionWebhook` and when it expires, carried in the route's `replyTo` as `<expires ms> <url>`.
 * A webhook that does not fit the route's 200 characters is left out (the reply then goes through the
 * robot OpenAPI), and so is one that is not DingTalk's (see `isDingtalkWebhook`).
 */
export function dingtalkReplyTo(m: Pick<RobotMessage, 'msgId' | 'sessionWebhook' | 'sessionWebhookExpiredTime'>, apiBaseUrl: string): string {
  const url = m.sessionWebhook;
  if (url && m.sessionWebhookExpiredTime !== undefined && isDingtalkWebhook(url, apiBaseUrl)) {
    const replyTo = `${m.sessionWebhookExpiredTime} ${url}`;
    if (replyTo.length <= 200) return replyTo;
  }
  return m.msgId;
}

/** The session webhook a route's `replyTo` carries, or undefined (then the reply takes the robot OpenAPI). */
export function sessionWebhookOf(replyTo: string): { url: string; expiresAt: number } | undefined {
  const m = /^(\d{1,16}) (https?:\/\/\S+)$/.exec(replyTo);
  return m ? { expiresAt: Number(m[1]), url: m[2] ?? '' } : undefined;
}

/** `@<robot name>` taken out of the text, as LangBot does; DingTalk's space after the mention too. */
function withoutMention(text: string, robotName: string): string {
  return (robotName ? text.split(`@${robotName}`).join('') : text).trim();
}

/**
 * The message's chain as LangBot's dingtalk converter builds it: an At of the bot first when it was
 * mentioned, then the text (rich text in order). A picture, which DingTalk gives only as a download
 * code, becomes a pending Image holding that code as `image_id` (see `resolvePictures`, and
 * `imagePlaceholders` of platform-kit); a voice message its transcription (DingTalk's `recognition`), else
 * `[Voice]`; a file a File named as sent.
 */
function chainOf(m: RobotMessage, config: DingtalkConfig, botId: string): MessageComponent[] {
  const chain: MessageComponent[] = [];
  const mentioned = m.isInAtList === true || (m.chatbotUserId !== '' && m.atUsers.some((u) => u.dingtalkId === m.chatbotUserId));
  if (mentioned) chain.push({ type: 'At', target: botId, display: config.robot_name });
  const plain = (text: string) => {
    const t = withoutMention(storableText(text), config.robot_name);
    if (t) chain.push({ type: 'Plain', text: t });
  };
  const content = m.content;
  switch (m.msgtype) {
    case 'text':
      plain(m.text?.content ?? '');
      break;
    case 'richText':
      for (const item of content?.richText ?? []) {
        if (item.type === 'picture') chain.push(pendingImage(item.downloadCode ?? ''));
        else if (item.text !== undefined && item.text !== '\n') plain(item.text);
      }
      break;
    case 'picture':
      chain.push(pendingImage(content?.downloadCode ?? content?.pictureDownloadCode ?? ''));
      break;
    case 'audio':
      if (content?.recognition) plain(content.recognition);
      else chain.push({ type: 'Plain', text: '[Voice]' });
      break;
    case 'file':
      chain.push({ type: 'File', id: content?.downloadCode ?? '', name: storableText(content?.fileName ?? 'file'), size: 0, url: '', path: '', base64: '' });
      break;
    default:
      break;
  }
  return storableChain(chain);
}

/**
 * The chain with its pictures' download codes exchanged for download URLs (`download`), which the
 * runner reads for a vision model as it reads any image URL; as `resolvePendingImages` bounds it.
 */
export function resolvePictures(chain: MessageComponent[], download: (code: string) => Promise<string>, failed: (reason: string) => void): Promise<MessageComponent[]> {
  return resolvePendingImages(chain, async (image) => ({ ...image, url: await download(image.image_id) }), failed);
}

const MESSAGE_TYPES: ReadonlySet<string> = new Set(['text', 'richText', 'picture', 'audio', 'file']);

/**
 * A robot message (the parsed JSON) as a query: a private chat (`conversationType` "1") is a person
 * session of the sender's staff id, a group ("2") a group session of the conversation, as LangBot
 * keys them; de-duplicated by msgId. Other message types, the bot's own messages and messages
 * without content are skipped; a message missing a field it needs is malformed.
 */
export function parseRobotMessage(json: unknown, config: DingtalkConfig, botId: string, stream: boolean): ParsedMessage {
  const parsed = RobotMessage.safeParse(json);
  if (!parsed.success) return { ok: false, error: issues(parsed.error) };
  const m = parsed.data;
  const ref = { msgId: m.msgId };
  if (!MESSAGE_TYPES.has(m.msgtype)) return { ok: true, query: null, skipped: `msgtype ${m.msgtype}`, ref };
  if (m.chatbotUserId !== '' && m.senderId === m.chatbotUserId) return { ok: true, query: null, skipped: 'the bot\'s own message', ref };
  const messageChain = chainOf(m, config, botId);
  if (!messageChain.some((c) => c.type !== 'At')) return { ok: true, query: null, skipped: 'no content', ref };
  const sender = m.senderStaffId || m.senderId;
  const group = m.conversationType === '2';
  return {
    ok: true,
    ref,
    query: {
      sessionId: group ? m.conversationId : sender,
      launcherType: group ? 'group' : 'person',
      senderId: sender,
      senderName: m.senderNick || sender,
      ...(group ? { groupName: m.conversationTitle ?? '' } : {}),
      messageChain,
      replyTo: dingtalkReplyTo(m, config.api_base_url),
      dedupId: m.msgId,
      stream,
    },
  };
}
