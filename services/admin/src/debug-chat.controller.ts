// The console's debug chat: the ingress web chat relayed behind the admin sign-in. The admin service
// adds the web chat token; the browser never holds it. Sending needs the admin role (it runs the
// pipeline and its model); reading the answer stream needs a viewer. Each call names its session by
// the browser's session key, which is relayed bound to the signed-in user: the same key from another
// user opens another session, so no one reads a chat they did not start.
import { createHash } from 'node:crypto';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DebugChat } from '@conveyor/contracts';
import { AdminApiError, type Principal } from '@conveyor/admin';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { currentTraceId } from '@conveyor/telemetry';
import { Caller, parse } from './http.js';
import type { ConsoleEnv } from './console-env.js';

/** A relayed call's bound; the answer stream has none (it lasts as long as the browser listens). */
const CALL_TIMEOUT_MS = 15_000;
const BOT_ID_RE = /^[0-9a-fA-F-]{32,36}$/;

@Controller(`api/v1${DebugChat.DEBUG_CHAT_PATH}`)
export class DebugChatController {
  constructor(@Inject(INFRA) private readonly infra: Infra & { env: ConsoleEnv }) {}

  /**
   * The ingress URL of one chat path and the headers to call it with; the bot id and session key are
   * checked here, so nothing else reaches the ingress.
   */
  private target(botId: string, caller: Principal, req: Request, tail: 'events' | 'messages' | 'reset'): { url: string; headers: Record<string, string> } {
    const { ADMIN_INGRESS_URL: base, WEBCHAT_TOKEN: token } = this.infra.env;
    if (!BOT_ID_RE.test(botId)) throw AdminApiError.invalid('path.botId', 'must be a bot id (UUID)');
    const sessionKey = req.header(DebugChat.CHAT_SESSION_KEY_HEADER);
    const field = `header.${DebugChat.CHAT_SESSION_KEY_HEADER}`;
    if (!sessionKey || !DebugChat.CHAT_SESSION_KEY_RE.test(sessionKey)) throw AdminApiError.invalid(field, 'the chat\'s session key: 32–128 letters, digits, _ or -');
    if (!base || !token) {
      const setting = !base ? 'env.ADMIN_INGRESS_URL' : 'env.WEBCHAT_TOKEN';
      throw new AdminApiError('not_configured', `${setting}: the debug chat is not configured: set ADMIN_INGRESS_URL and WEBCHAT_TOKEN on the admin service (and WEBCHAT_ENABLED on the ingress)`, { field: setting });
    }
    const url = `${base.replace(/\/+$/, '')}/chat/api/bots/${encodeURIComponent(botId)}/session/${tail}`;
    const userKey = createHash('sha256').update('conveyor console chat\0').update(caller.username).update('\0').update(sessionKey).digest('base64url');
    return { url, headers: { authorization: `Bearer ${token}`, [DebugChat.CHAT_SESSION_KEY_HEADER]: userKey } };
  }

  private async call(botId: string, caller: Principal, req: Request, tail: 'messages' | 'reset', body?: unknown): Promise<unknown> {
    const { url, headers } = this.target(botId, caller, req, tail);
    let res: globalThis.Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body ?? {}),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
    } catch (err) {
      this.infra.logger.warn({ err, botId, traceId: currentTraceId() }, 'debug chat: the ingress is unreachable');
      throw new AdminApiError('internal', 'the ingress web chat is unreachable; check ADMIN_INGRESS_URL');
    }
    const answer: unknown = await res.json().catch(() => undefined);
    if (res.ok) return answer;
    throw this.ingressError(res.status, answer, botId);
  }

  /** The ingress's refusal as the API's error, classified by its status. */
  private ingressError(status: number, answer: unknown, botId: string): AdminApiError {
    const said = typeof answer === 'object' && answer !== null && typeof Reflect.get(answer, 'error') === 'string' ? String(Reflect.get(answer, 'error')) : `HTTP ${status}`;
    if (status === 400 || status === 413) return new AdminApiError('validation_failed', `body.text: ${said}`, { field: 'body.text' });
    if (status === 404) return AdminApiError.notFound('bot', botId);
    if (status === 403) return new AdminApiError('conflict', `bot ${botId} is disabled; enable it to chat`, { field: 'path.botId' });
    // 401 here means the two services hold different web chat tokens: a deployment error, not the user's.
    this.infra.logger.error({ status, botId, traceId: currentTraceId() }, 'debug chat: the ingress refused the relayed call');
    return new AdminApiError('internal', status === 401 ? 'the ingress refused the admin service\'s WEBCHAT_TOKEN; both must hold the same token' : `the ingress answered: ${said}`);
  }

  @Post('bots/:botId/session/messages')
  @HttpCode(202)
  async message(@Param('botId') botId: string, @Caller() caller: Principal, @Req() req: Request, @Body() body: unknown) {
    const message = parse(DebugChat.DebugChatMessage, body, 'body');
    return DebugChat.DebugChatAccepted.parse(await this.call(botId, caller, req, 'messages', message));
  }

  @Post('bots/:botId/session/reset')
  @HttpCode(201)
  async reset(@Param('botId') botId: string, @Caller() caller: Principal, @Req() req: Request) {
    return DebugChat.DebugChatReset.parse(await this.call(botId, caller, req, 'reset'));
  }

  /** The answer stream, passed through as it arrives; closed when either side goes away. */
  @Get('bots/:botId/session/events')
  async events(@Param('botId') botId: string, @Caller() caller: Principal, @Req() req: Request, @Res() res: Response) {
    const { url, headers } = this.target(botId, caller, req, 'events');
    const abort = new AbortController();
    req.on('close', () => abort.abort());
    let upstream: globalThis.Response;
    try {
      upstream = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal });
    } catch (err) {
      if (abort.signal.aborted) return;
      this.infra.logger.warn({ err, botId, traceId: currentTraceId() }, 'debug chat: the ingress is unreachable');
      throw new AdminApiError('internal', 'the ingress web chat is unreachable; check ADMIN_INGRESS_URL');
    }
    if (!upstream.ok || !upstream.body) {
      const answer: unknown = await upstream.json().catch(() => undefined);
      throw this.ingressError(upstream.status, answer, botId);
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    try {
      for await (const chunk of upstream.body) {
        if (res.write(chunk)) continue;
        await new Promise<void>((resolve) => {
          res.once('drain', () => resolve());
          abort.signal.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    } catch {
      // The browser left or the ingress went away: either way this stream is over.
    } finally {
      abort.abort();
      res.end();
    }
  }
}
