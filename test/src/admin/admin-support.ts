import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AdminApi, ConfigChanged } from '@conveyor/contracts';
import type { RunningService } from '../harness/services.js';
import { NATS_URL, type TestSystem } from '../harness/system.js';
import { waitUntil } from '../harness/wait.js';

export const ADMIN_PASSWORD = 'correct horse battery staple';

/** Starts the admin service of a test system with a first admin user and an encryption key. */
export async function startAdmin(sys: TestSystem, env: NodeJS.ProcessEnv = {}): Promise<RunningService> {
  return sys.services.start('admin', { CONVEYOR_ADMIN_PASSWORD: ADMIN_PASSWORD, CONVEYOR_SECRET_KEY: randomBytes(32).toString('base64'), ...env });
}

export interface ApiAnswer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** A viewer user made by the admin `api`, signed in on `baseUrl` (an admin replica). */
export async function signedInViewer(api: AdminClient, baseUrl: string, username: string): Promise<AdminClient> {
  const made = await api.call('POST', '/users', { username, password: ADMIN_PASSWORD, role: 'viewer' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const viewer = new AdminClient(baseUrl);
  await viewer.login(username, ADMIN_PASSWORD);
  return viewer;
}

/** The data of a server-sent events stream's first event other than a keepalive, then the stream closed. */
async function firstEventData(body: ReadableStream<Uint8Array>): Promise<unknown> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return undefined;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (/^event: ?keepalive$/m.test(block)) continue;
        const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.replace(/^data: ?/, '')).join('\n');
        return data ? JSON.parse(data) : undefined;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** A client of the admin API that keeps the session cookie, like a browser. */
export class AdminClient {
  private cookie: string | undefined;

  constructor(readonly baseUrl: string, private readonly bearer?: string) {}

  async call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer<T>> {
    const res = await fetch(`${this.baseUrl}/api/v1${path}`, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(this.bearer ? { authorization: `Bearer ${this.bearer}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie?.startsWith(`${AdminApi.ADMIN_SESSION_COOKIE}=`)) this.cookie = setCookie.split(';')[0];
    // A server-sent events stream never ends: its first event (the snapshot) is the answer.
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      return { status: res.status, body: await firstEventData(res.body!) as T, headers: res.headers };
    }
    const text = await res.text();
    // A JSON answer is parsed; any other (the query log's CSV export) is kept as its text.
    const json = (res.headers.get('content-type') ?? '').includes('json');
    return { status: res.status, body: !text ? undefined : json ? JSON.parse(text) : text, headers: res.headers };
  }

  /** The session cookie (`name=value`) for a request this client does not make itself (a multipart upload). */
  sessionCookie(): string | undefined {
    return this.cookie;
  }

  async login(username = 'admin', password = ADMIN_PASSWORD): Promise<ApiAnswer> {
    const answer = await this.call('POST', '/auth/login', { username, password });
    if (answer.status !== 200) throw new Error(`login answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer;
  }
}

/** Collects the `config.changed` events of a test system's prefix. */
export class ConfigEvents {
  readonly received: ConfigChanged[] = [];

  private constructor(private readonly nc: NatsConnection) {}

  static async open(sys: TestSystem): Promise<ConfigEvents> {
    const nc = await connect({ servers: NATS_URL });
    const events = new ConfigEvents(nc);
    nc.subscribe(sys.topology.subjects.configChanged, { callback: (_err, msg) => void events.received.push(ConfigChanged.parse(msg.json())) });
    await nc.flush();
    return events;
  }

  waitFor(kind: ConfigChanged['kind'], id: string, revision: number): Promise<ConfigChanged> {
    return waitUntil(`config.changed ${kind} ${id} revision ${revision}`, () => this.received.find((e) => e.kind === kind && e.id === id && e.revision === revision), 15_000);
  }

  close(): Promise<void> {
    return this.nc.close();
  }
}

export interface SseEvent {
  type: string;
  data: unknown;
}

/** An open server-sent events stream, with the events received so far. */
export class SseStream {
  readonly events: SseEvent[] = [];
  private readonly abort = new AbortController();

  static async open(client: AdminClient, path: string): Promise<SseStream> {
    const stream = new SseStream();
    const res = await fetch(`${client.baseUrl}/api/v1${path}`, { headers: { cookie: client.sessionCookie() ?? '', accept: 'text/event-stream' }, signal: stream.abort.signal });
    assert.equal(res.status, 200, await (res.status === 200 ? Promise.resolve('') : res.text()));
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    void stream.read(res.body!);
    return stream;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const type = /^event: ?(.*)$/m.exec(block)?.[1] ?? 'message';
          const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.replace(/^data: ?/, '')).join('\n');
          if (type !== 'keepalive') this.events.push({ type, data: data ? JSON.parse(data) : null });
        }
      }
    } catch {
      // Closed by close().
    }
  }

  waitFor<T>(what: string, pick: (events: SseEvent[]) => T | undefined): Promise<T> {
    return waitUntil(what, () => pick(this.events), 30_000);
  }

  close(): void {
    this.abort.abort();
  }
}

