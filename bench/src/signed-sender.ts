import { Pool } from 'undici';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, sign } from '@conveyor/http-bot';
import type { TestSystem } from '@conveyor/test';

/** What the ingress answered a message with; `acceptedId` when it accepted it (its `202`'s `data.accepted_message_id`). */
export interface SentMessage {
  status: number;
  body: unknown;
  acceptedId?: string;
}

/**
 * The bench's load generator: signed HTTP-bot messages POSTed to the ingress over a keep-alive pool
 * with undici's `request`, the client the shape floor's sender uses. The test harness's `post` goes
 * through the global `fetch`, whose Fetch-standard machinery cost the bench process more CPU per
 * message than the floor's whole load generator; on two shared cores that CPU is taken from the
 * services, so both benches send the same way.
 */
export class SignedSender {
  private readonly pool: Pool;
  private readonly path: string;

  constructor(private readonly sys: Pick<TestSystem, 'services' | 'botId' | 'inboundSecret'>, connections: number) {
    this.pool = new Pool(sys.services.get('ingress').url, { connections });
    this.path = `/bots/${sys.botId}`;
  }

  async send(message: unknown): Promise<SentMessage> {
    const raw = Buffer.from(JSON.stringify(message));
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await this.pool.request({
      path: this.path,
      method: 'POST',
      headers: { 'content-type': 'application/json', [HEADER_TIMESTAMP]: ts, [HEADER_SIGNATURE]: sign(this.sys.inboundSecret, ts, raw) },
      body: raw,
    });
    const body: unknown = await res.body.json();
    const acceptedId = res.statusCode === 202 ? acceptedIdOf(body) : undefined;
    return { status: res.statusCode, body, ...(acceptedId !== undefined ? { acceptedId } : {}) };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function acceptedIdOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || !('data' in body)) return undefined;
  const data = body.data;
  if (typeof data !== 'object' || data === null || !('accepted_message_id' in data)) return undefined;
  return typeof data.accepted_message_id === 'string' ? data.accepted_message_id : undefined;
}
