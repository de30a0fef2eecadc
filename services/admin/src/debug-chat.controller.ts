// The console's debug chat: the ingress web chat relayed behind the admin sign-in. The admin service
// adds the web chat token; the browser never holds it. Sending needs the admin role (it runs the
// pipeline and its model); reading the answer stream needs a viewer.
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DebugChat } from '@conveyor/contracts';
import { AdminApiError } from '@conveyor/admin';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { currentTraceId } from '@conveyor/telemetry';
import { parse } from './http.js';
import type { ConsoleEnv } from './console-env.js';

/** A relayed call's bound; the answer stream has none (it lasts as long as the browser listens). */
const CALL_TIMEOUT_MS = 15_000;
const BOT_ID_RE = /^[0-9a-fA-F-]{32,36}$/;

@Controller(`api/v1${DebugChat.DEBUG_CHAT_PATH}`)
export class DebugChatController {
  constructor(@Inject(INFRA) private readonly infra: Infra & { env: ConsoleEnv }) {}

  /** The ingress URL of one chat path; the ids are checked here, so nothing else reaches the ingress. */
  private target(botId: string, sessionId: string, tail: 'events' | 'messages' | 'reset'): { url: string; token: string } {
    const { ADMIN_INGRESS_URL: base, WEBCHAT_TOKEN: token } = this.infra.env;
    if (!BOT_ID_RE.test(botId)) throw AdminApiError.invalid('path.botId', 'must be a bot id (UUID)');
    if (!DebugChat.DEBUG_CHAT_SESSION_RE.test(sessionId)) throw AdminApiError.invalid('path.sessionId', 'letters, digits, _ and - only, at most 100');
    if (!base || !token) {
      const field = !base ? 'env.ADMIN_INGRESS_URL' : 'env.WEBCHAT_TOKEN';
      throw new AdminApiError('not_configured', `${field}: the debug chat is not configured: set ADMIN_INGRESS_URL and WEBCHAT_TOKEN on the admin service (and WEBCHAT_ENABLED on the ingress)`, { field });
    }
    const url = `${base.replace(/\/+$/, '')}/chat/api/bots/${encodeURIComponent(botId)}/sessions/${encodeURIComponent(sessionId)}/${tail}`;
    return { url, token };
  }

  private async call(botId: string, sessionId: string, tail: 'messages' | 'reset', body?: unknown): Promise<unknown> {
    const { url, token } = this.target(botId, sessionId, tail);
    let res: globalThis.Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
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

  @Post('bots/:botId/sessions/:sessionId/messages')
  @HttpCode(202)
  async message(@Param('botId') botId: string, @Param('sessionId') sessionId: string, @Body() body: unknown) {
    const message = parse(DebugChat.DebugChatMessage, body, 'body');
    return DebugChat.DebugChatAccepted.parse(await this.call(botId, sessionId, 'messages', message));
  }

  @Post('bots/:botId/sessions/:sessionId/reset')
  @HttpCode(201)
  async reset(@Param('botId') botId: string, @Param('sessionId') sessionId: string) {
    return DebugChat.DebugChatReset.parse(await this.call(botId, sessionId, 'reset'));
  }

  /** The answer stream, passed through as it arrives; closed when either side goes away. */
  @Get('bots/:botId/sessions/:sessionId/events')
  async events(@Param('botId') botId: string, @Param('sessionId') sessionId: string, @Req() req: Request, @Res() res: Response) {
    const { url, token } = this.target(botId, sessionId, 'events');
    const abort = new AbortController();
    req.on('close', () => abort.abort());
    let upstream: globalThis.Response;
    try {
      upstream = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: abort.signal });
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
