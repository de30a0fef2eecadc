import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Client, defaultHttpInstance, type Logger } from '@larksuiteoapi/node-sdk';
import { LIMITS, plainText, type ReplyRoute } from '@conveyor/contracts';
import { inlinedImage, readBoundedMedia, resolvePendingImages, type BotConfigs, type DeliveryContext, type OutboundReply, type PlatformAdapter, type SendResult } from '@conveyor/platform-kit';
import { LarkConfigSchema, larkApiBase, type LarkConfig } from './config.js';
import { LARK } from './name.js';
import type { LarkInbound } from './parse.js';

/** Lark refuses a text message over 150 KB; cut well below it and say so. */
const MAX_TEXT = 30_000;
const truncate = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 20)}\n\n… (truncated)` : text);
/** Clients kept per app (each holds its tenant token through the SDK's cache); more bots than this rebuild theirs. */
const MAX_CLIENTS = 64;
const HTTP_TIMEOUT_MS = 15_000;

/**
 * The SDK logs a failed call's whole request, Authorization header included; failures are reported
 * through the delivery result instead, so its own logging is off.
 */
const silent: Logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, trace: () => {} };

/** An interactive card showing `text`; `update_multi` is what lets `im.message.patch` change it for everyone. */
export function larkCard(text: string): string {
  return JSON.stringify({ config: { wide_screen_mode: true, update_multi: true }, elements: [{ tag: 'markdown', content: text }] });
}

/** An HTTP failure's status and Lark's `code`/`msg` (never the request, which carries the token). */
function describe(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const response = 'response' in err && typeof err.response === 'object' && err.response !== null ? err.response : undefined;
  if (!response) return 'code' in err ? String(err.code) : 'network error';
  const status = 'status' in response ? String(response.status) : '?';
  const data = 'data' in response && typeof response.data === 'object' && response.data !== null ? response.data : {};
  const lark = 'code' in data ? ` code ${String(data.code)}${'msg' in data ? ` ${String(data.msg)}` : ''}` : '';
  return `HTTP ${status}${lark}`;
}

/** As `describe`, for a call answered as a stream: Lark's error is JSON in that stream (read up to 4 KiB). */
async function describeStreamed(err: unknown): Promise<string> {
  const response = typeof err === 'object' && err !== null && 'response' in err && typeof err.response === 'object' && err.response !== null ? err.response : undefined;
  const data = response && 'data' in response ? response.data : undefined;
  if (!(data instanceof Readable)) return describe(err);
  let text = '';
  for await (const chunk of data) {
    text += String(chunk);
    if (text.length > 4096) break;
  }
  data.destroy();
  const status = 'status' in response! ? String(response.status) : '?';
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === 'object' && body !== null && 'code' in body) return `HTTP ${status} code ${String(body.code)}${'msg' in body ? ` ${String(body.msg)}` : ''}`;
  } catch {
    // Not JSON: the status says it.
  }
  return `HTTP ${status}`;
}

interface LarkResult {
  code?: number | undefined;
  msg?: string | undefined;
}
const failed = (res: LarkResult) => `lark: code ${res.code ?? '?'} ${res.msg ?? ''}`.trim();

/** An Open API client of one app; the SDK obtains and caches its tenant token. */
export function larkClient(config: LarkConfig): Client {
  // The SDK's HTTP client (axios) waits for ever by default; a hung Open API call must fail.
  if (!defaultHttpInstance.defaults.timeout) defaultHttpInstance.defaults.timeout = HTTP_TIMEOUT_MS;
  return new Client({ appId: config.app_id, appSecret: config.app_secret, domain: larkApiBase(config), logger: silent });
}

/** Open API clients by app, endpoint and secret, so each keeps its tenant token across calls. */
class LarkClients {
  private readonly clients = new Map<string, Client>();

  get(config: LarkConfig): Client {
    const domain = larkApiBase(config);
    const key = createHash('sha256').update(`${config.app_id}\n${config.app_secret}\n${domain}`).digest('hex');
    const cached = this.clients.get(key);
    if (cached) return cached;
    if (this.clients.size >= MAX_CLIENTS) {
      const oldest = this.clients.keys().next();
      if (!oldest.done) this.clients.delete(oldest.value);
    }
    const client = larkClient(config);
    this.clients.set(key, client);
    return client;
  }
}
const larkClients = new LarkClients();

/** The message with its images downloaded with the app's token and inlined (LangBot passes them on as base64). */
export async function withImages(m: LarkInbound, config: LarkConfig, failed: (reason: string) => void): Promise<LarkInbound> {
  const client = larkClients.get(config);
  const messageChain = await resolvePendingImages(m.messageChain, async (image) => inlinedImage(image, await downloadLarkImage(client, m.messageId, image.image_id, LIMITS.inlineImageBytes)), failed);
  return { ...m, messageChain };
}

/**
 * An image of a message (`im/v1/messages/:message_id/resources/:file_key?type=image`) with the app's
 * tenant token, read no further than `maxBytes`. Errors name Lark's status and code, never the token.
 */
export async function downloadLarkImage(client: Client, messageId: string, imageKey: string, maxBytes: number): Promise<{ bytes: Buffer; contentType: string }> {
  let res: Awaited<ReturnType<Client['im']['v1']['messageResource']['get']>>;
  try {
    res = await client.im.v1.messageResource.get({ path: { message_id: messageId, file_key: imageKey }, params: { type: 'image' } });
  } catch (err) {
    throw new Error(`lark image download: ${await describeStreamed(err)}`);
  }
  const headers: unknown = res.headers;
  const header = (name: string) => (typeof headers === 'object' && headers !== null && name in headers ? String((headers as Record<string, unknown>)[name]) : '');
  const bytes = await readBoundedMedia(res.getReadableStream(), maxBytes, header('content-length'));
  return { bytes, contentType: (header('content-type') || 'application/octet-stream').split(';')[0]!.trim() };
}

/**
 * Sends one whole text reply: an answer to the route's message (`im.message.reply`), or a new
 * message to the chat. Resolves with Lark's message id; a refusal by Lark (a `code` other than 0)
 * rejects with the code and message, never the request.
 */
export async function sendLarkText(client: Client, route: ReplyRoute, text: string): Promise<{ messageId?: string }> {
  const content = JSON.stringify({ text: truncate(text) });
  let res: LarkResult & { data?: { message_id?: string | undefined } | undefined };
  try {
    res = route.replyTo
      ? await client.im.message.reply({ path: { message_id: route.replyTo }, data: { msg_type: 'text', content } })
      : await client.im.message.create({
          params: { receive_id_type: route.launcherType === 'group' ? 'chat_id' : 'open_id' },
          data: { receive_id: route.sessionId, msg_type: 'text', content },
        });
  } catch (err) {
    throw new Error(`lark: ${describe(err)}`);
  }
  if (res.code !== 0) throw new LarkRefusedError(res.code ?? -1, failed(res));
  return res.data?.message_id ? { messageId: res.data.message_id } : {};
}

/** Lark answered an Open API call with a `code` other than 0. Recognised by `code`. */
export class LarkRefusedError extends Error {
  readonly code = 'LARK_REFUSED';

  constructor(readonly larkCode: number, message: string) {
    super(message);
    this.name = 'LarkRefusedError';
  }
}

/**
 * Lark / Feishu outbound through `@larksuiteoapi/node-sdk`, which obtains and caches the tenant
 * access token. A whole reply answers the message (`im.message.reply`, text). With
 * `enable-stream-reply`, the first streamed snapshot answers it with an interactive card and each
 * later one (the delivery layer coalesces them) patches that card (`im.message.patch`), the final
 * with the whole text; the card's message id is kept with the reply in Redis, so a part resumed by
 * another replica patches the same card. A reply carries a `uuid` from the part's identity, so a part
 * sent again after a crash is not posted twice.
 */
export class LarkAdapter implements PlatformAdapter {
  readonly name = LARK;

  constructor(private readonly configs: BotConfigs) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    const parsed = LarkConfigSchema.safeParse(bot.adapterConfig ?? {});
    if (!parsed.success) return { delivered: false, reason: `lark bot ${route.botId} misconfigured: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}` };
    const client = larkClients.get(parsed.data);
    const text = truncate(plainText(reply.message));
    const streaming = reply.stream && parsed.data['enable-stream-reply'];
    try {
      // Stream off: only the final part of a streamed reply shows.
      if (!text || (reply.stream && !reply.isFinal && !streaming)) return { delivered: true };
      const cardId = await ctx.state.get('lark:mid');
      if (cardId) {
        const res = await client.im.message.patch({ path: { message_id: cardId }, data: { content: larkCard(text) } });
        return res.code === 0 ? { delivered: true } : { delivered: false, reason: failed(res) };
      }
      const msgType = streaming ? 'interactive' : 'text';
      const content = streaming ? larkCard(text) : JSON.stringify({ text });
      // At most 50 characters; the same for a part sent again, so Lark drops the repeat.
      const uuid = createHash('sha256').update(`${ctx.queryId}:${ctx.partKey}`).digest('hex').slice(0, 48);
      const res = route.replyTo
        ? await client.im.message.reply({ path: { message_id: route.replyTo }, data: { msg_type: msgType, content, uuid } })
        : await client.im.message.create({
            params: { receive_id_type: route.launcherType === 'group' ? 'chat_id' : 'open_id' },
            data: { receive_id: route.sessionId, msg_type: msgType, content, uuid },
          });
      if (res.code !== 0) return { delivered: false, reason: failed(res) };
      const messageId = res.data?.message_id;
      if (streaming && messageId) await ctx.state.set('lark:mid', messageId);
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: `lark: ${describe(err)}` };
    }
  }
}
