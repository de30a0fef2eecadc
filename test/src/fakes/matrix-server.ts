import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Waiters, closeServer, listen, readJsonObject } from './http-util.js';

/** A client-server API call the fake answered, as received. */
export interface MatrixCall {
  method: string;
  /** The path, e.g. `/_matrix/client/v3/sync`, without the query. */
  path: string;
  query: Record<string, string>;
  body: Record<string, any>;
  /** The bearer token. */
  token: string;
  status: number;
  at: number;
}

/** An event a bot sent (one per transaction id: a repeated one is answered with it, not sent again). */
export interface MatrixSentEvent {
  eventId: string;
  roomId: string;
  sender: string;
  txnId: string;
  content: Record<string, any>;
}

/** A message the bot sent as a client shows it: its text after the last `m.replace` edit, and the edits. */
export interface MatrixShownMessage {
  eventId: string;
  roomId: string;
  body: string;
  /** The event it is a reply to (`m.relates_to.m.in_reply_to`). */
  replyTo: string | undefined;
  mentions: string[];
  /** The `m.new_content` bodies of its edits, in order. */
  edits: string[];
}

export interface MatrixBotUser {
  token: string;
  userId: string;
  displayName: string;
}

export interface FakeMatrix {
  /** The homeserver URL, a bot's `homeserver_url`. */
  url: string;
  calls: MatrixCall[];
  /** Creates a room whose joined members are `members` (bot users among them); returns its id. */
  createRoom(members: string[], name?: string): string;
  /** Puts a text message of `sender` into the room's timeline; returns its event id. */
  emitMessage(roomId: string, sender: string, body: string, opts?: { mentions?: string[]; formattedBody?: string }): string;
  /** Puts an event as it is into the room's timeline (for events that are not well-formed messages). */
  emitEvent(roomId: string, event: object): void;
  /** Stores media as the content repository does; returns its `mxc://` URL. */
  uploadMedia(bytes: Buffer, contentType: string): string;
  /** Puts an `m.image` of `sender` with that media into the room's timeline; returns its event id. */
  emitImage(roomId: string, sender: string, mxc: string, body: string): string;
  /** Invites a user into a room: their next sync lists it under `rooms.invite`; a join makes them a member. */
  invite(roomId: string, userId: string): void;
  members(roomId: string): string[];
  sent(): MatrixSentEvent[];
  /** The bot's messages in a room (edits folded in), in the order they were sent. */
  shown(roomId: string): MatrixShownMessage[];
  /** Sync requests of a token, each with the `since` it carried (undefined: an initial sync). */
  syncsOf(token: string): { since: string | undefined; at: number }[];
  /** Long polls of a token open now, and the most ever open at once. */
  polls(token: string): { open: number; maxOpen: number };
  /** Every `next_batch` the fake handed out to a token. */
  batchesOf(token: string): string[];
  waitFor(predicate: (calls: MatrixCall[]) => boolean, timeoutMs?: number): Promise<MatrixCall[]>;
  close(): Promise<void>;
}

interface Room {
  id: string;
  name: string;
  members: Set<string>;
  invited: Set<string>;
}

const API = '/_matrix/client/v3';
const TIMELINE_LIMIT = 100;

/**
 * A fake Matrix homeserver speaking the client-server API: `/account/whoami`, `/profile/{user}/displayname`,
 * `/sync` as a long poll (`since`, `timeout`, `filter` read; `next_batch` tokens `s<n>` naming a
 * position in one timeline of all rooms; no `since` is an initial sync that returns only the latest
 * event of each room; an unknown `since` is 400 M_UNKNOWN_POS), `/rooms/{room}/joined_members`,
 * `/rooms/{room}/state/m.room.name` (404 M_NOT_FOUND without a name), `/join/{room}` for an invited
 * user, and `PUT /rooms/{room}/send/m.room.message/{txnId}`, idempotent per access token and
 * transaction id as Synapse is. Media is served by the authenticated
 * `/_matrix/client/v1/media/download/{server}/{mediaId}` (404 M_NOT_FOUND for media it does not
 * hold). `Authorization: Bearer` is checked (401 M_UNKNOWN_TOKEN). What a bot
 * sends enters the timeline too, so its own messages come back in its syncs, as on a real server.
 */
export async function startFakeMatrix(opts: { users: MatrixBotUser[]; serverName?: string }): Promise<FakeMatrix> {
  const server_name = opts.serverName ?? 'hs.test';
  const users = new Map(opts.users.map((u) => [u.token, u]));
  const media = new Map<string, { bytes: Buffer; contentType: string }>();
  let nextMedia = 1;
  const displayNames = new Map(opts.users.map((u) => [u.userId, u.displayName]));
  const calls: MatrixCall[] = [];
  const waiters = new Waiters(() => calls, 'Matrix API calls');
  const rooms = new Map<string, Room>();
  const timeline: { roomId: string; event: Record<string, any> }[] = [];
  const pollWakers = new Set<() => void>();
  const txns = new Map<string, string>();
  const sent: MatrixSentEvent[] = [];
  const syncs = new Map<string, { since: string | undefined; at: number }[]>();
  const batches = new Map<string, string[]>();
  const pollStats = new Map<string, { open: number; maxOpen: number }>();
  let nextRoom = 1;
  let nextEvent = 1;

  const append = (roomId: string, event: Record<string, any>) => {
    timeline.push({ roomId, event });
    for (const wake of [...pollWakers]) wake();
  };
  const eventId = () => `$ev${nextEvent++}-${Math.random().toString(36).slice(2, 10)}`;
  const position = () => `s${timeline.length}`;
  const visibleTo = (userId: string, from: number, limit = TIMELINE_LIMIT) => {
    const join: Record<string, { timeline: { events: object[]; limited: boolean }; state: { events: object[] } }> = {};
    for (let i = from; i < timeline.length; i++) {
      const { roomId, event } = timeline[i]!;
      if (!rooms.get(roomId)?.members.has(userId)) continue;
      const r = (join[roomId] ??= { timeline: { events: [], limited: false }, state: { events: [] } });
      if (r.timeline.events.length >= limit) {
        r.timeline.events.shift();
        r.timeline.limited = true;
      }
      r.timeline.events.push(event);
    }
    const invite: Record<string, object> = {};
    for (const room of rooms.values()) if (room.invited.has(userId)) invite[room.id] = { invite_state: { events: [] } };
    return { join, invite };
  };
  const stats = (token: string) => {
    let s = pollStats.get(token);
    if (!s) pollStats.set(token, (s = { open: 0, maxOpen: 0 }));
    return s;
  };

  const server = createServer((req, res) => void handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(500).end(); }));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const body = req.method === 'PUT' || req.method === 'POST' ? await readJsonObject(req) : {};
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const reply = (status: number, json: object) => {
      calls.push({ method: req.method ?? '', path, query, body, token, status, at: Date.now() });
      if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      waiters.notify();
    };
    const error = (status: number, errcode: string, message: string) => reply(status, { errcode, error: message });
    const user = users.get(token);
    if (!user) return error(401, 'M_UNKNOWN_TOKEN', 'Invalid access token passed.');
    const download = /^\/_matrix\/client\/v1\/media\/download\/([^/]+)\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && download) {
      const file = media.get(`mxc://${decodeURIComponent(download[1]!)}/${decodeURIComponent(download[2]!)}`);
      if (!file) return error(404, 'M_NOT_FOUND', 'Not found');
      calls.push({ method: 'GET', path, query, body, token, status: 200, at: Date.now() });
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.bytes.length) }).end(file.bytes);
      return waiters.notify();
    }
    if (!path.startsWith(API)) return error(404, 'M_UNRECOGNIZED', 'Unrecognized request');
    const rest = path.slice(API.length).split('/').map(decodeURIComponent);
    const roomOf = (id: string | undefined) => (id ? rooms.get(id) : undefined);

    if (req.method === 'GET' && path === `${API}/account/whoami`) return reply(200, { user_id: user.userId, device_id: 'FAKEDEVICE' });
    if (req.method === 'GET' && rest[1] === 'profile' && rest[3] === 'displayname') {
      const name = displayNames.get(rest[2] ?? '');
      return name === undefined ? error(404, 'M_NOT_FOUND', 'Profile was not found') : reply(200, { displayname: name });
    }
    if (req.method === 'GET' && path === `${API}/sync`) {
      const since = url.searchParams.get('since') ?? undefined;
      let list = syncs.get(token);
      if (!list) syncs.set(token, (list = []));
      list.push({ since, at: Date.now() });
      const answer = (from: number, limit = TIMELINE_LIMIT) => {
        const next = position();
        let handed = batches.get(token);
        if (!handed) batches.set(token, (handed = []));
        handed.push(next);
        reply(200, { next_batch: next, rooms: visibleTo(user.userId, from, limit), presence: { events: [] }, account_data: { events: [] } });
      };
      if (since === undefined) {
        // An initial sync: each room with its latest event only, as a timeline limit of 1 gives.
        return answer(0, 1);
      }
      const m = /^s(\d+)$/.exec(since);
      const from = m ? Number(m[1]) : NaN;
      if (!Number.isInteger(from) || from > timeline.length) return error(400, 'M_UNKNOWN_POS', 'Unknown position');
      const timeoutMs = Math.min(Number(url.searchParams.get('timeout') ?? 0) || 0, 60_000);
      const has = () => Object.keys(visibleTo(user.userId, from).join).length > 0 || [...rooms.values()].some((r) => r.invited.has(user.userId));
      if (has() || timeoutMs === 0) return answer(from);
      const s = stats(token);
      s.open++;
      s.maxOpen = Math.max(s.maxOpen, s.open);
      // A poll opening is no call answered, yet `polls` changed: waiters on it look again now.
      waiters.notify();
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          pollWakers.delete(wake);
          resolve();
        };
        const wake = () => {
          if (has()) done();
        };
        const timer = setTimeout(done, timeoutMs);
        pollWakers.add(wake);
        req.once('close', done);
        res.once('close', done);
      });
      s.open--;
      if (res.destroyed || req.destroyed) return waiters.notify();
      return answer(from);
    }
    if (req.method === 'GET' && rest[1] === 'rooms' && rest[3] === 'joined_members') {
      const room = roomOf(rest[2]);
      if (!room?.members.has(user.userId)) return error(403, 'M_FORBIDDEN', 'User not in room');
      return reply(200, { joined: Object.fromEntries([...room.members].map((m) => [m, { display_name: displayNames.get(m) ?? null, avatar_url: null }])) });
    }
    if (req.method === 'GET' && rest[1] === 'rooms' && rest[3] === 'state' && rest[4] === 'm.room.name') {
      const room = roomOf(rest[2]);
      if (!room?.members.has(user.userId)) return error(403, 'M_FORBIDDEN', 'User not in room');
      return room.name ? reply(200, { name: room.name }) : error(404, 'M_NOT_FOUND', 'Event not found');
    }
    if (req.method === 'POST' && rest[1] === 'join') {
      const room = roomOf(rest[2]);
      if (!room || !(room.invited.has(user.userId) || room.members.has(user.userId))) return error(403, 'M_FORBIDDEN', 'You are not invited to this room.');
      room.invited.delete(user.userId);
      if (!room.members.has(user.userId)) {
        room.members.add(user.userId);
        append(room.id, { type: 'm.room.member', state_key: user.userId, sender: user.userId, event_id: eventId(), origin_server_ts: Date.now(), content: { membership: 'join' } });
      }
      return reply(200, { room_id: room.id });
    }
    if (req.method === 'PUT' && rest[1] === 'rooms' && rest[3] === 'send' && rest[4] === 'm.room.message' && rest[5]) {
      const room = roomOf(rest[2]);
      if (!room?.members.has(user.userId)) return error(403, 'M_FORBIDDEN', 'User not in room');
      const txnKey = `${token}\u0000${rest[5]}`;
      const known = txns.get(txnKey);
      if (known) return reply(200, { event_id: known });
      if (typeof body.msgtype !== 'string' || typeof body.body !== 'string') return error(400, 'M_BAD_JSON', 'msgtype and body are required');
      const id = eventId();
      txns.set(txnKey, id);
      const event = { type: 'm.room.message', event_id: id, sender: user.userId, origin_server_ts: Date.now(), content: body, unsigned: { transaction_id: rest[5] } };
      sent.push({ eventId: id, roomId: room.id, sender: user.userId, txnId: rest[5], content: body });
      append(room.id, event);
      return reply(200, { event_id: id });
    }
    return error(404, 'M_UNRECOGNIZED', 'Unrecognized request');
  };

  const url = await listen(server);
  return {
    url,
    calls,
    createRoom(members, name = '') {
      const id = `!room${nextRoom++}:${server_name}`;
      rooms.set(id, { id, name, members: new Set(members), invited: new Set() });
      return id;
    },
    emitMessage(roomId, sender, body, o = {}) {
      const id = eventId();
      append(roomId, {
        type: 'm.room.message', event_id: id, sender, origin_server_ts: Date.now(),
        content: { msgtype: 'm.text', body, ...(o.formattedBody ? { format: 'org.matrix.custom.html', formatted_body: o.formattedBody } : {}), ...(o.mentions ? { 'm.mentions': { user_ids: o.mentions } } : {}) },
      });
      return id;
    },
    emitEvent(roomId, event) {
      append(roomId, event as Record<string, any>);
    },
    uploadMedia(bytes, contentType) {
      const mxc = `mxc://${server_name}/media${nextMedia++}`;
      media.set(mxc, { bytes, contentType });
      return mxc;
    },
    emitImage(roomId, sender, mxc, body) {
      const id = eventId();
      append(roomId, { type: 'm.room.message', event_id: id, sender, origin_server_ts: Date.now(), content: { msgtype: 'm.image', body, url: mxc, info: { mimetype: media.get(mxc)?.contentType ?? 'image/png' } } });
      return id;
    },
    invite(roomId, userId) {
      rooms.get(roomId)?.invited.add(userId);
      for (const wake of [...pollWakers]) wake();
    },
    members: (roomId) => [...(rooms.get(roomId)?.members ?? [])],
    sent: () => sent,
    shown(roomId) {
      const out: MatrixShownMessage[] = [];
      const byId = new Map<string, MatrixShownMessage>();
      for (const e of sent.filter((s) => s.roomId === roomId)) {
        const rel = e.content['m.relates_to'];
        if (rel?.rel_type === 'm.replace' && byId.has(rel.event_id)) {
          const target = byId.get(rel.event_id)!;
          target.body = String(e.content['m.new_content']?.body ?? target.body);
          target.edits.push(target.body);
          continue;
        }
        const m: MatrixShownMessage = { eventId: e.eventId, roomId, body: String(e.content.body), replyTo: rel?.['m.in_reply_to']?.event_id, mentions: e.content['m.mentions']?.user_ids ?? [], edits: [] };
        byId.set(e.eventId, m);
        out.push(m);
      }
      return out;
    },
    syncsOf: (token) => syncs.get(token) ?? [],
    polls: (token) => ({ ...stats(token) }),
    batchesOf: (token) => batches.get(token) ?? [],
    waitFor: (predicate, timeoutMs) => waiters.waitFor(predicate, timeoutMs),
    async close() {
      for (const wake of [...pollWakers]) wake();
      await closeServer(server);
    },
  };
}
