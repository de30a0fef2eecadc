import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import WebSocket, { WebSocketServer } from 'ws';
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

/** What the fake's Socket Mode side saw. */
export interface SlackSocketModeState {
  /** Connections accepted so far, open now, and the most ever open at once. */
  opened: number;
  open: number;
  maxOpen: number;
  /** Envelope ids acknowledged by the app (`{envelope_id}` frames), in order. */
  acks: string[];
  /** Frames from the app that were no acknowledgement of a sent envelope. */
  unexpected: string[];
}

export interface SocketModeEnvelopeOptions {
  /** Slack's redelivery count (0 for the first delivery) and why it redelivers. */
  retryAttempt?: number;
  retryReason?: string;
  /** Reuse an envelope id, as a redelivery of the same envelope. */
  envelopeId?: string;
}

export interface FakeSlack {
  /** The Web API base URL, ending in `/` (what a bot's `api_base_url` is set to). */
  url: string;
  calls: SlackCall[];
  socketMode: SlackSocketModeState;
  /** Sends an `events_api` envelope carrying `payload` (an Events API body) on the open Socket Mode connection; returns its envelope id. */
  sendEnvelope(payload: unknown, opts?: SocketModeEnvelopeOptions): string;
  /** Sends a raw text frame (for malformed frames). */
  sendFrame(text: string): void;
  /** Sends `{type: 'disconnect', reason}` and closes the connection if the app has not after `graceMs`, as Slack does. */
  sendDisconnect(reason: 'refresh_requested' | 'warning' | 'link_disabled', graceMs?: number): void;
  waitForSocketMode(predicate: (state: SlackSocketModeState) => boolean, timeoutMs?: number): Promise<void>;
  /** Messages per channel as a user would see them now (posts and updates applied). */
  channel(channel: string): SlackMessage[];
  waitFor(predicate: (calls: SlackCall[]) => boolean, timeoutMs?: number): Promise<SlackCall[]>;
  close(): Promise<void>;
}

/**
 * A fake Slack Web API speaking the real wire format: `POST /api/{method}` with the token as
 * `Authorization: Bearer`, parameters form-encoded (as @slack/web-api sends them) or JSON, answering
 * HTTP 200 with `{ok: true, ...}` or `{ok: false, error}`. Implements chat.postMessage and chat.update
 * with the bot token, and, with an app-level token, Socket Mode: `apps.connections.open` answers a
 * one-use WebSocket URL (`/link/?ticket=...`); the socket says `hello`, carries envelopes
 * (`{envelope_id, type: 'events_api', payload, accepts_response_payload, retry_attempt,
 * retry_reason}`), records the app's `{envelope_id}` acknowledgements and can send `disconnect`.
 */
export async function startFakeSlack(opts: { token: string; appToken?: string }): Promise<FakeSlack> {
  const calls: SlackCall[] = [];
  const waiters = new Waiters(() => calls, 'slack calls');
  const socketMode: SlackSocketModeState = { opened: 0, open: 0, maxOpen: 0, acks: [], unexpected: [] };
  const socketWaiters = new Waiters(() => [socketMode], 'slack socket mode');
  const tickets = new Set<string>();
  const sockets = new Set<WebSocket>();
  const sent = new Set<string>();
  let base = '';
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
    if (method === 'apps.connections.open') {
      // Only an app-level token opens a Socket Mode connection; a bot token is the wrong type.
      if (token === opts.token) return reply({ ok: false, error: 'not_allowed_token_type' });
      if (!opts.appToken || token !== opts.appToken) return reply({ ok: false, error: 'invalid_auth' });
      calls.push({ method, token, params: {} });
      const ticket = randomUUID();
      tickets.add(ticket);
      return reply({ ok: true, url: `${base.replace(/^http/, 'ws')}/link/?ticket=${ticket}&app_id=AFAKE` });
    }
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
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      socketMode.opened++;
      socketMode.open++;
      socketMode.maxOpen = Math.max(socketMode.maxOpen, socketMode.open);
      ws.on('message', (data) => {
        const text = data.toString();
        const ack = z.object({ envelope_id: z.string() }).loose().safeParse((() => { try { return JSON.parse(text); } catch { return null; } })());
        if (ack.success && sent.has(ack.data.envelope_id)) socketMode.acks.push(ack.data.envelope_id);
        else socketMode.unexpected.push(text.slice(0, 500));
        socketWaiters.notify();
      });
      ws.on('close', () => {
        sockets.delete(ws);
        socketMode.open--;
        socketWaiters.notify();
      });
      ws.send(JSON.stringify({ type: 'hello', num_connections: socketMode.open, debug_info: { host: 'applink-fake', build_number: 1, approximate_connection_time: 18060 }, connection_info: { app_id: 'AFAKE' } }));
      socketWaiters.notify();
    });
  });
  /** Slack spreads envelopes over an app's connections; the tests hold one, the newest. */
  const current = (): WebSocket => {
    const open = [...sockets].filter((ws) => ws.readyState === WebSocket.OPEN);
    const ws = open.at(-1);
    if (!ws) throw new Error('fake Slack: no open Socket Mode connection');
    return ws;
  };
  base = await listen(server);
  return {
    url: `${base}/api/`,
    calls,
    socketMode,
    sendEnvelope: (payload, o = {}) => {
      const envelopeId = o.envelopeId ?? randomUUID();
      sent.add(envelopeId);
      const retryAttempt = o.retryAttempt ?? 0;
      current().send(JSON.stringify({
        envelope_id: envelopeId,
        payload,
        type: 'events_api',
        accepts_response_payload: false,
        retry_attempt: retryAttempt,
        retry_reason: o.retryReason ?? (retryAttempt > 0 ? 'timeout' : ''),
      }));
      return envelopeId;
    },
    sendFrame: (text) => current().send(text),
    sendDisconnect: (reason, graceMs = 5_000) => {
      const ws = current();
      ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'applink-fake' } }));
      setTimeout(() => ws.close(1000), graceMs).unref();
    },
    waitForSocketMode: async (p, t) => {
      await socketWaiters.waitFor(([state]) => p(state!), t);
    },
    channel: (channel) => channels.get(channel) ?? [],
    waitFor: (p, t) => waiters.waitFor(p, t),
    close: async () => {
      for (const ws of sockets) ws.terminate();
      wss.close();
      await closeServer(server);
    },
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
