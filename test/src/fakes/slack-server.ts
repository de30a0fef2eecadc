import { createServer } from 'node:http';
import { z } from 'zod';
import { slackSignature } from '@conveyor/slack';
import { Waiters, closeServer, listen, readBody } from './http-util.js';

/** A Web API call the fake Slack received. */
export interface SlackCall {
  method: string;
  token: string;
  params: Record<string, string>;
}

export interface SlackMessage {
  ts: string;
  text: string;
  updates: number;
}

export interface FakeSlack {
  /** The Web API base URL, ending in `/` (what a bot's `api_base_url` is set to). */
  url: string;
  calls: SlackCall[];
  /** Messages per channel as a user would see them now (posts and updates applied). */
  channel(channel: string): SlackMessage[];
  waitFor(predicate: (calls: SlackCall[]) => boolean, timeoutMs?: number): Promise<SlackCall[]>;
  close(): Promise<void>;
}

/**
 * A fake Slack Web API speaking the real wire format: `POST /api/{method}` with the token as
 * `Authorization: Bearer`, parameters form-encoded (as @slack/web-api sends them) or JSON, answering
 * HTTP 200 with `{ok: true, ...}` or `{ok: false, error}`. Implements chat.postMessage and chat.update.
 */
export async function startFakeSlack(opts: { token: string }): Promise<FakeSlack> {
  const calls: SlackCall[] = [];
  const waiters = new Waiters(() => calls, 'slack calls');
  const channels = new Map<string, SlackMessage[]>();
  let clock = 1_700_000_000;
  const server = createServer(async (req, res) => {
    const raw = (await readBody(req)).toString('utf8');
    const reply = (body: Record<string, unknown>) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      waiters.notify();
    };
    const m = /^\/api\/([\w.]+)$/.exec(req.url ?? '');
    if (!m) return reply({ ok: false, error: 'unknown_method' });
    const method = m[1] ?? '';
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (token !== opts.token) return reply({ ok: false, error: 'invalid_auth' });
    let params: Record<string, string>;
    if ((req.headers['content-type'] ?? '').startsWith('application/json')) {
      try {
        params = Object.fromEntries(Object.entries(z.record(z.string(), z.unknown()).parse(JSON.parse(raw))).map(([k, v]) => [k, String(v)]));
      } catch {
        return reply({ ok: false, error: 'invalid_json' });
      }
    } else {
      params = Object.fromEntries(new URLSearchParams(raw));
    }
    calls.push({ method, token, params });
    const channel = params.channel ?? '';
    const messages = channels.get(channel) ?? [];
    if (method === 'chat.postMessage') {
      if (!channel) return reply({ ok: false, error: 'channel_not_found' });
      if (!params.text) return reply({ ok: false, error: 'no_text' });
      const msg = { ts: `${clock++}.000100`, text: params.text, updates: 0 };
      messages.push(msg);
      channels.set(channel, messages);
      return reply({ ok: true, channel, ts: msg.ts, message: { type: 'message', text: msg.text, ts: msg.ts, bot_id: 'BFAKE' } });
    }
    if (method === 'chat.update') {
      const msg = messages.find((x) => x.ts === params.ts);
      if (!msg) return reply({ ok: false, error: 'message_not_found' });
      msg.text = params.text ?? '';
      msg.updates++;
      return reply({ ok: true, channel, ts: msg.ts, text: msg.text });
    }
    return reply({ ok: false, error: 'unknown_method' });
  });
  const base = await listen(server);
  return {
    url: `${base}/api/`,
    calls,
    channel: (channel) => channels.get(channel) ?? [],
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: () => closeServer(server),
  };
}

/**
 * Sends an Events API request the way Slack does: JSON body, `X-Slack-Request-Timestamp` and
 * `X-Slack-Signature` (v0 HMAC-SHA256 of `v0:{ts}:{body}` with the signing secret).
 */
export function sendSlackEvent(url: string, signingSecret: string, body: unknown, opts: { timestamp?: number; rawBody?: string } = {}): Promise<Response> {
  const raw = opts.rawBody ?? JSON.stringify(body);
  const ts = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': slackSignature(signingSecret, ts, Buffer.from(raw, 'utf8')),
    },
    body: raw,
  });
}
