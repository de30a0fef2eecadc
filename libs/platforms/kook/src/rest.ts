import { z } from 'zod';

const REQUEST_TIMEOUT_MS = 15_000;
/** Characters of an error body kept for the message (a proxy's HTML page must not flood the logs). */
const ERROR_BODY_CHARS = 300;

/** KOOK refused a call: `status` is the HTTP status, `kookCode` the `code` of KOOK's JSON envelope. */
export class KookApiError extends Error {
  readonly code = 'KOOK_API_ERROR';

  constructor(readonly status: number, readonly kookCode: number | undefined, message: string) {
    super(message);
    this.name = 'KookApiError';
  }

  /** A refusal that sending again will not change: KOOK answered with an error code, or a 4xx other than 408/429. */
  get permanent(): boolean {
    if (this.status === 429 || this.status === 408 || this.status >= 500) return false;
    return this.status >= 400 || (this.kookCode !== undefined && this.kookCode !== 0);
  }
}

/** Every answer of KOOK's REST API: `{ code, message, data }`, code 0 meaning success. */
const Envelope = z.looseObject({ code: z.number().int(), message: z.string().max(10_000).default(''), data: z.unknown().optional() });
const GatewayIndex = z.looseObject({ url: z.string().max(4_096).regex(/^wss?:\/\//, 'url: a ws(s) URL') });
const Me = z.looseObject({ id: z.string().min(1).max(64), username: z.string().max(1_000).default('') });
const Sent = z.looseObject({ msg_id: z.string().min(1).max(128) });

export interface KookRestOptions {
  baseUrl: string;
  token: string;
  fetchImpl?: typeof fetch;
  signal?: AbortSignal;
}

/** The KMarkdown message type of KOOK's message APIs. */
export const KOOK_KMARKDOWN = 9;

/** The few REST calls Conveyor makes, with `Authorization: Bot <token>`; failures are KookApiErrors. */
export class KookRest {
  constructor(private readonly o: KookRestOptions) {}

  async call<T>(method: 'GET' | 'POST', path: string, schema: z.ZodType<T>, body?: object, onWritten?: () => void): Promise<T> {
    const signals = [AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(this.o.signal ? [this.o.signal] : [])];
    const pending = (this.o.fetchImpl ?? fetch)(`${this.o.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bot ${this.o.token}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.any(signals),
    });
    onWritten?.();
    const res = await pending;
    const text = await res.text();
    const route = path.split('?')[0];
    const envelope = Envelope.safeParse(safeJson(text));
    if (!res.ok || !envelope.success || envelope.data.code !== 0) {
      const detail = envelope.success ? envelope.data.message : text.slice(0, ERROR_BODY_CHARS);
      throw new KookApiError(res.status, envelope.success ? envelope.data.code : undefined, `KOOK ${method} ${route} failed with ${res.status}${envelope.success ? ` code ${envelope.data.code}` : ''}: ${detail}`);
    }
    const parsed = schema.safeParse(envelope.data.data);
    if (!parsed.success) throw new KookApiError(res.status, 0, `KOOK ${method} ${route} answered an unexpected body`);
    return parsed.data;
  }

  /** The WebSocket URL to connect to; `compress` asks for zlib-compressed frames. */
  gatewayUrl(compress: boolean): Promise<string> {
    return this.call('GET', `/gateway/index?compress=${compress ? 1 : 0}`, GatewayIndex).then((g) => g.url);
  }

  /** The bot's own user (its id tells its mentions and its own messages). */
  me(): Promise<z.output<typeof Me>> {
    return this.call('GET', '/user/me', Me);
  }

  /** A KMarkdown message in a channel; `quote` makes it a reply to that message. */
  createMessage(channelId: string, content: string, quote?: string, onWritten?: () => void): Promise<string> {
    return this.call('POST', '/message/create', Sent, { type: KOOK_KMARKDOWN, target_id: channelId, content, ...(quote ? { quote } : {}) }, onWritten).then((m) => m.msg_id);
  }

  /** A KMarkdown direct message to a user. */
  createDirectMessage(userId: string, content: string, quote?: string, onWritten?: () => void): Promise<string> {
    return this.call('POST', '/direct-message/create', Sent, { type: KOOK_KMARKDOWN, target_id: userId, content, ...(quote ? { quote } : {}) }, onWritten).then((m) => m.msg_id);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
