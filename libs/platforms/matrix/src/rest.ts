import { z } from 'zod';
import { readBoundedMedia } from '@conveyor/platform-kit';

/** The largest response read from the homeserver; a sync answer holds at most the filter's timeline limit per room. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 15_000;

/** The homeserver refused a call (`errcode` is Matrix's error code, e.g. `M_UNKNOWN_TOKEN`); a 4xx other than 408/429 is for good. */
export class MatrixApiError extends Error {
  readonly code = 'MATRIX_API_ERROR';

  constructor(readonly status: number, readonly errcode: string, message: string) {
    super(message);
    this.name = 'MatrixApiError';
  }

  get permanent(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 408 && this.status !== 429;
  }
}

const Events = z.looseObject({ events: z.array(z.unknown()).max(10_000).default([]) });
const JoinedRoom = z.looseObject({ timeline: Events.default({ events: [] }), state: Events.default({ events: [] }) });

/** A `/sync` answer, as far as the bot reads it; the events themselves are checked one by one. */
export const SyncResponse = z.looseObject({
  next_batch: z.string().min(1).max(1_000),
  rooms: z.looseObject({
    join: z.record(z.string().max(255), JoinedRoom).default({}),
    invite: z.record(z.string().max(255), z.unknown()).default({}),
  }).default({ join: {}, invite: {} }),
});
export type SyncResponse = z.output<typeof SyncResponse>;

const WhoAmI = z.looseObject({ user_id: z.string().min(1).max(255) });
const DisplayName = z.looseObject({ displayname: z.string().max(1_000).nullish() });
const JoinedMembers = z.looseObject({ joined: z.record(z.string().max(255), z.looseObject({ display_name: z.string().max(1_000).nullish() })).default({}) });
const RoomName = z.looseObject({ name: z.string().max(1_000).default('') });
const Sent = z.looseObject({ event_id: z.string().min(1).max(255) });

export interface MatrixRestOptions {
  homeserverUrl: string;
  accessToken: string;
  fetchImpl?: typeof fetch;
  signal?: AbortSignal;
}

/** The few client-server API calls a bot makes, with the access token as a bearer token. */
export class MatrixRest {
  constructor(private readonly o: MatrixRestOptions) {}

  async whoami(): Promise<string> {
    return WhoAmI.parse(await this.call('GET', '/_matrix/client/v3/account/whoami')).user_id;
  }

  /** The user's display name; '' when none is set or the profile cannot be read. */
  async displayName(userId: string): Promise<string> {
    try {
      return DisplayName.parse(await this.call('GET', `/_matrix/client/v3/profile/${encodeURIComponent(userId)}/displayname`)).displayname ?? '';
    } catch {
      return '';
    }
  }

  /**
   * One long poll: answers once something happened after `since` or `timeoutMs` passed. `signal`
   * ends it early (the connection is closed); the request's own bound is the poll time plus a margin.
   */
  async sync(p: { since?: string; timeoutMs: number; filter: string; signal?: AbortSignal }): Promise<unknown> {
    const q = new URLSearchParams({ timeout: String(p.timeoutMs), filter: p.filter });
    if (p.since) q.set('since', p.since);
    return this.call('GET', `/_matrix/client/v3/sync?${q}`, undefined, { timeoutMs: p.timeoutMs + REQUEST_TIMEOUT_MS, ...(p.signal ? { signal: p.signal } : {}) });
  }

  parseSync(raw: unknown): SyncResponse {
    return SyncResponse.parse(raw);
  }

  async joinedMembers(roomId: string): Promise<Map<string, string>> {
    const body = JoinedMembers.parse(await this.call('GET', `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/joined_members`));
    return new Map(Object.entries(body.joined).map(([id, m]) => [id, m.display_name ?? '']));
  }

  /** The room's name; '' when it has none (404 M_NOT_FOUND). */
  async roomName(roomId: string): Promise<string> {
    try {
      return RoomName.parse(await this.call('GET', `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/state/m.room.name`)).name;
    } catch (err) {
      if (err instanceof MatrixApiError && err.status === 404) return '';
      throw err;
    }
  }

  async join(roomId: string): Promise<void> {
    await this.call('POST', `/_matrix/client/v3/join/${encodeURIComponent(roomId)}`, {});
  }

  /**
   * Sends an `m.room.message`. The homeserver answers a repeated transaction id of this access token
   * with the event it created the first time, so a send tried again is shown once.
   */
  async send(roomId: string, txnId: string, content: Record<string, unknown>, onWritten?: () => void): Promise<string> {
    const path = `/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`;
    return Sent.parse(await this.call('PUT', path, content, { onWritten })).event_id;
  }

  /**
   * A media file by its `mxc://server/media-id` URL, through the authenticated download endpoint
   * (the access token as for every call). Larger than `maxBytes` is refused rather than read whole.
   */
  async download(mxc: string, maxBytes: number): Promise<{ bytes: Buffer; contentType: string }> {
    const m = /^mxc:\/\/([^/]+)\/([A-Za-z0-9_-]+)$/.exec(mxc);
    if (!m) throw new MatrixApiError(400, 'M_INVALID_MXC', 'not an mxc:// media URL');
    const path = `/_matrix/client/v1/media/download/${encodeURIComponent(m[1]!)}/${encodeURIComponent(m[2]!)}`;
    const signals = [AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(this.o.signal ? [this.o.signal] : [])];
    const res = await (this.o.fetchImpl ?? fetch)(`${this.o.homeserverUrl}${path}`, { headers: { authorization: `Bearer ${this.o.accessToken}` }, signal: AbortSignal.any(signals) });
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new MatrixApiError(res.status, 'M_MEDIA', `Matrix media download failed with ${res.status}`);
    }
    const bytes = await readBoundedMedia(res.body, maxBytes, res.headers.get('content-length'));
    return { bytes, contentType: (res.headers.get('content-type') ?? 'application/octet-stream').split(';')[0]!.trim() };
  }

  private async call(method: string, path: string, body?: unknown, opts: { timeoutMs?: number; signal?: AbortSignal; onWritten?: (() => void) | undefined } = {}): Promise<unknown> {
    const signals = [AbortSignal.timeout(opts.timeoutMs ?? REQUEST_TIMEOUT_MS), ...(opts.signal ? [opts.signal] : []), ...(this.o.signal ? [this.o.signal] : [])];
    const pending = (this.o.fetchImpl ?? fetch)(`${this.o.homeserverUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.o.accessToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.any(signals),
    });
    opts.onWritten?.();
    const res = await pending;
    const text = await readBounded(res);
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const route = path.split('?')[0];
    if (!res.ok) {
      const err = z.looseObject({ errcode: z.string().max(200).default('M_UNKNOWN'), error: z.string().max(500).default('') }).safeParse(json);
      const errcode = err.success ? err.data.errcode : 'M_UNKNOWN';
      throw new MatrixApiError(res.status, errcode, `Matrix ${method} ${route} failed with ${res.status} ${errcode}${err.success && err.data.error ? `: ${err.data.error}` : ''}`);
    }
    if (json === undefined) throw new MatrixApiError(res.status, 'M_NOT_JSON', `Matrix ${method} ${route} answered no JSON`);
    return json;
  }
}

async function readBounded(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      // Leaving the loop by the throw cancels the rest of the body.
      throw new MatrixApiError(res.status, 'M_TOO_LARGE', `the homeserver's answer is over ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}
