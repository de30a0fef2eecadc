import { createHash, randomUUID } from 'node:crypto';
import { LIMITS, type MessageChain, type ReplyRoute } from '@conveyor/contracts';
import { ConnectionStateKeeper } from '@conveyor/gateway';
import { inlinedImage, PlatformRejectedError, resolvePendingImages, splitMessageText, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { z } from 'zod';
import type { MatrixConfig } from './config.js';
import { chainToContent, MatrixMessageEvent, messageToQuery, skipReason, textContent, type MatrixRoomInfo, type MatrixSelf } from './convert.js';
import { MatrixApiError, MatrixRest, SyncResponse } from './rest.js';

/** A reply is split into messages of at most this many characters; an event must stay under the homeserver's 64 KiB. */
export const MATRIX_MAX_BODY = 16_000;
/** How long one `/sync` long poll waits for something to happen. */
export const SYNC_TIMEOUT_MS = 30_000;
/** Rooms whose members and name are kept in memory; membership and name events in a sync refresh one. */
const MAX_ROOMS_CACHED = 1_000;
const ROOM_CACHE_MS = 5 * 60_000;

/** The connection state of a Matrix bot: the `next_batch` of the last sync whose messages were all published. */
export const MatrixSyncState = z.object({ nextBatch: z.string().min(1).max(1_000) });
export type MatrixSyncState = z.output<typeof MatrixSyncState>;

/**
 * The sync filter: room messages, membership and names only (no presence, typing, receipts or
 * account data), members loaded lazily, at most 100 timeline events per room and batch.
 */
export const SYNC_FILTER = JSON.stringify({
  presence: { not_types: ['*'] },
  account_data: { not_types: ['*'] },
  room: {
    timeline: { limit: 100, types: ['m.room.message', 'm.room.member', 'm.room.name'] },
    state: { types: ['m.room.member', 'm.room.name'], lazy_load_members: true },
    ephemeral: { not_types: ['*'] },
    account_data: { not_types: ['*'] },
  },
});
/** The first sync of a bot only learns where "now" is: its backlog is not answered. */
const INITIAL_FILTER = JSON.stringify({ presence: { not_types: ['*'] }, account_data: { not_types: ['*'] }, room: { timeline: { limit: 1 }, state: { types: [] }, ephemeral: { not_types: ['*'] }, account_data: { not_types: ['*'] } } });

export function restOf(config: MatrixConfig, signal?: AbortSignal): MatrixRest {
  return new MatrixRest({ homeserverUrl: config.homeserver_url, accessToken: config.access_token, ...(signal ? { signal } : {}) });
}

/** A transaction id from a stable name of what is sent (a reply part and its piece), so a send tried again reuses it. */
export function txnIdOf(...parts: (string | number)[]): string {
  return `cv${createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 32)}`;
}

/**
 * Sends one whole reply into the route's room: split at MATRIX_MAX_BODY characters, the first piece a
 * reply to the user's message (as LangBot's quote_origin does). Transaction ids are `txnBase` and the
 * piece's index, so the same reply part sent again is shown once.
 */
export async function sendWhole(rest: MatrixRest, route: ReplyRoute, message: MessageChain, txnBase: string, onWritten?: () => void): Promise<{ messageId?: string }> {
  const { body, mentions } = chainToContent(message);
  if (!body) return {};
  try {
    let first: string | undefined;
    for (const [i, piece] of splitMessageText(body, MATRIX_MAX_BODY).entries()) {
      const content = textContent(piece, { ...(i === 0 && route.replyTo ? { replyTo: route.replyTo } : {}), mentions: i === 0 ? mentions : [] });
      const id = await rest.send(route.sessionId, txnIdOf(txnBase, i), content, i === 0 ? onWritten : undefined);
      first ??= id;
    }
    return first !== undefined ? { messageId: first } : {};
  } catch (err) {
    if (err instanceof MatrixApiError && err.permanent) throw new PlatformRejectedError(err.message);
    throw err;
  }
}

/** The homeserver refused the `since` token itself (forgotten or never its own), not the request. */
export function isLostPosition(err: unknown): boolean {
  return err instanceof MatrixApiError && err.status === 400 && (err.errcode === 'M_UNKNOWN_POS' || err.errcode === 'M_INVALID_PARAM');
}

/** What a timeline event is before it is read as a message: an object with a string `type`. */
const AnyEvent = z.looseObject({ type: z.string().max(255), event_id: z.string().max(255).optional() });

function issueOf(err: z.ZodError): string {
  const issue = err.issues[0];
  return `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`;
}

/**
 * Matrix: the gateway replica holding the bot long-polls the homeserver's `/sync`. The `next_batch`
 * of the last batch whose messages were all published is kept in the connection's fenced state, so
 * the next connection of the bot, on this replica or on one taking it over, syncs on from there; a
 * batch synced twice is published twice and dropped the second time by event id. A bot with no
 * stored position starts at "now": what the rooms held before is not answered. Rooms the bot is
 * invited to are joined, as LangBot does. The bot's own events and edits are not answered.
 */
export const matrixConnection: PlatformConnection<MatrixConfig> = {
  async open(deps) {
    const stop = new AbortController();
    const rest = restOf(deps.config, stop.signal);
    const userId = await rest.whoami();
    if (userId !== deps.config.user_id) deps.logger.warn({ botId: deps.botId, configured: deps.config.user_id, userId }, 'the access token is of another Matrix user than user_id; going by the token');
    const self: MatrixSelf = { userId, displayName: await rest.displayName(userId) };
    const state = deps.state(MatrixSyncState);
    const keeper = new ConnectionStateKeeper<MatrixSyncState>(state, (err) => deps.logger.warn({ err, botId: deps.botId }, 'Matrix sync position not stored; the next connection syncs from an older one'));
    const stored = await state.get();
    let since = stored?.nextBatch;
    if (since === undefined) {
      const first = rest.parseSync(await rest.sync({ timeoutMs: 0, filter: INITIAL_FILTER }));
      await joinInvited(first);
      since = first.next_batch;
      await keeper.now({ nextBatch: since });
    }
    deps.logger.info({ botId: deps.botId, resumed: stored !== undefined, botUserId: userId }, 'Matrix sync ready');

    const rooms = new Map<string, { info: MatrixRoomInfo; at: number }>();
    const roomInfo = async (roomId: string): Promise<MatrixRoomInfo> => {
      const hit = rooms.get(roomId);
      if (hit && Date.now() - hit.at < ROOM_CACHE_MS) return hit.info;
      const [members, name] = await Promise.all([rest.joinedMembers(roomId), rest.roomName(roomId)]);
      const info = { roomId, members, name };
      rooms.delete(roomId);
      rooms.set(roomId, { info, at: Date.now() });
      while (rooms.size > MAX_ROOMS_CACHED) rooms.delete(rooms.keys().next().value!);
      return info;
    };

    async function joinInvited(batch: SyncResponse): Promise<void> {
      for (const roomId of Object.keys(batch.rooms.invite)) {
        try {
          await deps.fence();
          await rest.join(roomId);
          deps.logger.info({ botId: deps.botId, roomId }, 'joined a Matrix room the bot was invited to');
        } catch (err) {
          deps.logger.warn({ err, botId: deps.botId, roomId }, 'could not join a Matrix room the bot was invited to');
        }
      }
    }

    /** Publishes the batch's messages in order; resolves with how many there were. */
    const handle = async (batch: SyncResponse): Promise<number> => {
      let published = 0;
      await joinInvited(batch);
      for (const [roomId, room] of Object.entries(batch.rooms.join)) {
        const changes = [...room.state.events, ...room.timeline.events].some((e) => {
          const t = AnyEvent.safeParse(e);
          return t.success && (t.data.type === 'm.room.member' || t.data.type === 'm.room.name');
        });
        if (changes) rooms.delete(roomId);
        for (const raw of room.timeline.events) {
          const head = AnyEvent.safeParse(raw);
          if (!head.success) {
            deps.malformed(`Matrix event in ${roomId}: ${issueOf(head.error)}`);
            continue;
          }
          if (head.data.type !== 'm.room.message') continue;
          const parsed = MatrixMessageEvent.safeParse(raw);
          if (!parsed.success) {
            deps.malformed(`Matrix event: ${issueOf(parsed.error)}`, { roomId, ...(head.data.event_id ? { eventId: head.data.event_id } : {}) });
            continue;
          }
          const e = parsed.data;
          if (skipReason(e, self)) continue;
          const query = messageToQuery(e, await roomInfo(roomId), self, deps.botId, deps.config['enable-stream-reply']);
          const messageChain = await resolvePendingImages(query.messageChain, async (image) => inlinedImage(image, await rest.download(image.image_id, LIMITS.inlineImageBytes)), (reason) => deps.logger.warn({ botId: deps.botId, roomId, eventId: e.event_id, reason }, 'Matrix image not read; passed on as a placeholder'));
          await deps.publish({ ...query, messageChain });
          published++;
        }
      }
      return published;
    };

    const loop = async (): Promise<string> => {
      while (!stop.signal.aborted) {
        let batch: SyncResponse;
        let published: number;
        try {
          const raw = await rest.sync({ since, timeoutMs: SYNC_TIMEOUT_MS, filter: SYNC_FILTER, signal: stop.signal });
          const parsed = SyncResponse.safeParse(raw);
          if (!parsed.success) {
            // The position cannot be read, so this batch cannot be skipped either: the connection ends and is tried again.
            deps.malformed(`Matrix sync answer: ${issueOf(parsed.error)}`);
            return 'the homeserver answered a sync that is not one';
          }
          batch = parsed.data;
          published = await handle(batch);
        } catch (err) {
          if (stop.signal.aborted) return 'closed';
          if (isLostPosition(err)) {
            // Syncing from it would fail for ever: the next connection starts at "now" instead.
            deps.logger.warn({ botId: deps.botId, errcode: (err as MatrixApiError).errcode }, 'the homeserver no longer knows the stored sync position; starting from now');
            lost = true;
          }
          return err instanceof Error ? err.message : String(err);
        }
        since = batch.next_batch;
        // After messages the position is stored before the next poll, so a successor replays as little
        // as it can; an empty batch (a timeout) only moves it on, at most once a second.
        if (published > 0) await keeper.now({ nextBatch: since });
        else keeper.soon({ nextBatch: since });
      }
      return 'closed';
    };
    let lost = false;
    const running = loop();
    const ended = running.then(async (reason) => {
      await keeper.finish(since !== undefined && !lost ? { nextBatch: since } : null);
      return reason;
    });
    return {
      ended,
      close: async () => {
        stop.abort();
        await ended;
      },
      send: (route, message, onWritten) => sendWhole(restOf(deps.config), route, message, randomUUID(), onWritten),
    } satisfies OpenConnection;
  },
};
