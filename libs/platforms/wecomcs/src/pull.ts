import { randomUUID } from 'node:crypto';
import { LIMITS, redisKeys } from '@conveyor/contracts';
import { inboundQuery, inlinedImage, releaseIfHeld, resolvePendingImages, type InboundPullContext, type SharedAccessTokens } from '@conveyor/platform-kit';
import { callWechatApi, isTokenRejected, wecomDownloadMedia, wecomGetToken } from '@conveyor/wecom';
import type { WecomCsConfig } from './config.js';
import { kfReplyTo, readKfMessage, SyncMsgAnswer, type KfEvent } from './parse.js';
import { tokenApp } from './tokens.js';

/** Pages of one pull (1,000 messages each) at most; what is left waits for the next callback. */
const MAX_PAGES = 10;
/** Pulls one holder makes for callbacks that came while it pulled, at most. */
const MAX_ROUNDS = 5;
/** The pulling replica's hold on the account's cursor; longer than a pull of `MAX_PAGES` takes. */
const PULL_LOCK_MS = 120_000;
/**
 * Without a stored cursor `sync_msg` starts at the account's recent history (days of it): messages
 * older than this are not answered then, so a new bot does not answer yesterday's customers.
 */
export const FIRST_PULL_MAX_AGE_MS = 10 * 60_000;

export interface PullDeps {
  botId: string;
  config: WecomCsConfig;
  event: KfEvent;
  tokens: SharedAccessTokens;
  now?: () => number;
}

/**
 * Pulls the messages a `kf_msg_or_event` callback announces (`kf/sync_msg` with the callback's
 * token) and publishes each customer text or image as a person query of the customer, de-duplicated by
 * msgid. The account's cursor is kept in Redis and moved on only once a page's messages are
 * published, so a pull that fails is repeated from where it stood, on any replica. One replica pulls
 * an account at a time (a lock); a callback that finds it pulling asks it to pull once more.
 */
export async function pullKfMessages(ctx: InboundPullContext, deps: PullDeps): Promise<void> {
  const keys = redisKeys(ctx.prefix);
  const { botId, config, event } = deps;
  const now = deps.now ?? Date.now;
  const lock = keys.wecomKfPullLock(botId, event.OpenKfId);
  const again = keys.wecomKfPullAgain(botId, event.OpenKfId);
  const cursorKey = keys.wecomKfCursor(botId, event.OpenKfId);
  const mine = randomUUID();
  if ((await ctx.redis.set(lock, mine, 'PX', PULL_LOCK_MS, 'NX')) !== 'OK') {
    await ctx.redis.set(again, '1', 'PX', PULL_LOCK_MS);
    return;
  }
  const fetchImpl = ctx.fetchImpl ?? fetch;
  const app = tokenApp(config);
  const syncMsg = (body: object) =>
    deps.tokens.withToken(
      app,
      () => wecomGetToken(fetchImpl, config.api_base_url, config.corpid, config.secret),
      (token) => callWechatApi(fetchImpl, config.api_base_url, `/kf/sync_msg?access_token=${encodeURIComponent(token)}`, { method: 'POST', body: JSON.stringify(body) }, SyncMsgAnswer),
      isTokenRejected,
    );
  // LangBot downloads a customer's image with the access token and passes it on as base64.
  const downloadImage = (mediaId: string) =>
    deps.tokens.withToken(
      app,
      () => wecomGetToken(fetchImpl, config.api_base_url, config.corpid, config.secret),
      (token) => wecomDownloadMedia(fetchImpl, config.api_base_url, token, mediaId, LIMITS.inlineImageBytes),
      isTokenRejected,
    );

  try {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      await ctx.redis.del(again);
      let cursor = await ctx.redis.get(cursorKey);
      const oldest = cursor ? 0 : now() - FIRST_PULL_MAX_AGE_MS;
      for (let page = 0; page < MAX_PAGES; page++) {
        const answer = await syncMsg({ ...(cursor ? { cursor } : {}), token: event.Token, limit: 1000, voice_format: 0, open_kfid: event.OpenKfId });
        for (const raw of answer.msg_list) {
          const r = readKfMessage(raw);
          if ('skipped' in r) continue;
          const m = r.message;
          if (m.sendTime * 1000 < oldest) {
            ctx.logger.warn({ botId, openKfId: m.openKfId, msgId: m.msgId }, 'wecomcs: a message from before the first pull is not answered');
            continue;
          }
          const messageChain = await resolvePendingImages(m.messageChain, async (image) => inlinedImage(image, await downloadImage(image.image_id), 'image/jpeg'), (reason) =>
            ctx.logger.warn({ botId, openKfId: m.openKfId, msgId: m.msgId, reason }, 'wecomcs: an image was not downloaded; passed on as [Image]'));
          const message = { sessionId: m.customerId, launcherType: 'person' as const, senderId: m.customerId, senderName: m.customerId, messageChain };
          await ctx.publish(inboundQuery(message, { replyTo: kfReplyTo(m.openKfId, m.msgId), dedupId: m.msgId, stream: false }));
        }
        if (answer.next_cursor) {
          cursor = answer.next_cursor;
          await ctx.redis.set(cursorKey, cursor);
        }
        if (answer.has_more !== 1) break;
      }
      if ((await ctx.redis.exists(again)) === 0) break;
    }
  } finally {
    await releaseIfHeld(ctx.redis, lock, mine).catch(() => undefined);
  }
}
