import type { ReplyRoute } from '@conveyor/contracts';
import { splitMessageText, type DeliveryContext, type OutboundDeps, type OutboundReply, type PlatformAdapter, type SendResult } from '@conveyor/platform-kit';
import { parseMatrixConfig } from './config.js';
import { chainToContent, editContent, textContent } from './convert.js';
import { MATRIX_MAX_BODY, sendWhole, txnIdOf } from './connection.js';
import { MatrixRest } from './rest.js';

/** A streamed Matrix message is edited every 8th snapshot and on the final one, LangBot's rhythm for edited streams. */
export const MATRIX_EDIT_EVERY = 8;

/**
 * Matrix outbound. Sending needs no held connection, only the access token, so the dispatcher sends
 * every part itself over the client-server API. Each event's transaction id is derived from the
 * reply part (query id, part key, piece), and the homeserver answers a repeated transaction id with
 * the event it made the first time, so a part delivered again after a crash is shown once. A
 * streamed reply (`enable-stream-reply`) is one message, a reply to the user's, created with the
 * first visible snapshot and replaced (`m.replace`) every 8th snapshot and with the final text; text
 * past MATRIX_MAX_BODY goes out as further messages. The first event's id is kept with the reply in
 * Redis, so a part resumed by another replica edits the same message.
 */
export class MatrixAdapter implements PlatformAdapter {
  readonly name = 'matrix' as const;

  constructor(private readonly deps: OutboundDeps) {}

  async deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult> {
    const bot = await this.deps.configs.get(route.botId);
    if (!bot) return { delivered: false, reason: `bot ${route.botId} not found` };
    let config;
    try {
      config = parseMatrixConfig(bot.adapterConfig);
    } catch (err) {
      return { delivered: false, reason: `invalid matrix settings of bot ${route.botId}: ${err instanceof Error ? err.message : String(err)}` };
    }
    const rest = new MatrixRest({ homeserverUrl: config.homeserver_url, accessToken: config.access_token, ...(this.deps.fetchImpl ? { fetchImpl: this.deps.fetchImpl } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) });
    const part = `${ctx.queryId}:${ctx.partKey}`;
    try {
      const first = await ctx.state.get('mx:ev');
      if (!reply.stream || !config['enable-stream-reply'] || (!first && reply.isFinal)) {
        if (reply.stream && !reply.isFinal) return { delivered: true };
        await sendWhole(rest, route, reply.message, part);
        return { delivered: true };
      }
      const { body, mentions } = chainToContent(reply.message);
      if (!first) {
        if (!body) return { delivered: true };
        const id = await rest.send(route.sessionId, txnIdOf(part, 'first'), textContent(body.slice(0, MATRIX_MAX_BODY), { ...(route.replyTo ? { replyTo: route.replyTo } : {}), mentions }));
        await ctx.state.set('mx:ev', id);
        await ctx.state.set('mx:ord', String(ctx.chunkOrdinal));
        return { delivered: true };
      }
      if (reply.isFinal) {
        if ((await ctx.state.get('mx:fin')) === '1') return { delivered: true };
        const [head = '', ...more] = splitMessageText(body, MATRIX_MAX_BODY);
        if (head) await rest.send(route.sessionId, txnIdOf(part, 'final'), editContent(first, head, mentions));
        for (const [i, piece] of more.entries()) await rest.send(route.sessionId, txnIdOf(part, 'more', i), textContent(piece));
        await ctx.state.set('mx:fin', '1');
        return { delivered: true };
      }
      const last = Number((await ctx.state.get('mx:ord')) ?? 1);
      const bucket = (n: number) => Math.floor((n - 1) / MATRIX_EDIT_EVERY);
      if (body && bucket(ctx.chunkOrdinal) > bucket(Math.max(1, last))) {
        await rest.send(route.sessionId, txnIdOf(part, 'edit'), editContent(first, body.slice(0, MATRIX_MAX_BODY), mentions));
        await ctx.state.set('mx:ord', String(ctx.chunkOrdinal));
      }
      return { delivered: true };
    } catch (err) {
      return { delivered: false, reason: err instanceof Error ? err.message : String(err) };
    }
  }
}
