import { plainText } from '@conveyor/contracts';
import { hasPendingImages, PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { LarkRefusedError, larkClient, sendLarkText, withImages } from './adapter.js';
import { larkApiBase, type LarkConfig } from './config.js';
import { larkQuery, parseLarkBody } from './parse.js';
import { LarkSocket, fetchLarkEndpoint } from './socket.js';

/** Lark's answer to an event that was taken, or can never be (redelivering it would not help). */
const TAKEN = 200;
/** Lark's answer to an event that could not be published now: Lark delivers it again later. */
const TRY_AGAIN = 500;

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * Handles one whole event of the long connection: the same schema 2.0 body the webhook receives,
 * parsed by the same code, so both modes make identical queries. Resolves with the status the event
 * is answered with.
 */
export async function handleLarkEvent(deps: ConnectionDeps<LarkConfig>, payload: Buffer): Promise<number> {
  const json = parseJson(payload.toString('utf8'));
  if (!json.ok) {
    deps.malformed('event is not valid JSON');
    return TAKEN;
  }
  const parsed = parseLarkBody(json.value, deps.config.bot_name, deps.botId);
  switch (parsed.kind) {
    case 'malformed':
      deps.malformed(`event: ${parsed.error}`);
      return TAKEN;
    case 'challenge':
      deps.malformed('url_verification over the long connection (it belongs to the webhook)');
      return TAKEN;
    case 'ignored':
      return TAKEN;
    case 'message':
      try {
        const inbound = hasPendingImages(parsed.inbound.messageChain) ? await withImages(parsed.inbound, deps.config, (reason) => deps.logger.warn({ botId: deps.botId, messageId: parsed.inbound.messageId, reason }, 'Lark image not downloaded; passed on as [Image]')) : parsed.inbound;
        await deps.publish(larkQuery(inbound, deps.config['enable-stream-reply']));
        return TAKEN;
      } catch (err) {
        deps.logger.warn({ err, botId: deps.botId, eventId: parsed.inbound.eventId }, 'Lark event not published; Lark will deliver it again');
        return TRY_AGAIN;
      }
  }
}

/**
 * Lark / Feishu long connection (长连接), LangBot's default for a lark bot (`enable-webhook` off):
 * the gateway replica holding the bot asks `{domain}/callback/ws/endpoint` for a WebSocket URL with
 * the app's id and secret, keeps that WebSocket (binary pbbp2 frames, pings) and publishes each
 * `im.message.receive_v1` as a query. Replies go out through the Open API (the dispatcher's lark
 * adapter); `send` does the same for a whole reply relayed to the holder.
 *
 * Written over `ws` and `protobufjs` rather than the SDK's WSClient: with its own reconnection off,
 * that client gives no sign when an open socket closes (the supervisor would never reconnect), hands
 * events to its dispatcher reshaped instead of as the body the webhook parser reads, and reports
 * frames it cannot read only to its logger.
 */
export const larkConnection: PlatformConnection<LarkConfig> = {
  holds: (config) => !config['enable-webhook'],
  async open(deps): Promise<OpenConnection> {
    const { config } = deps;
    const endpoint = await fetchLarkEndpoint(larkApiBase(config), config.app_id, config.app_secret);
    const socket = await LarkSocket.connect({
      endpoint,
      onEvent: (payload) => handleLarkEvent(deps, payload),
      onMalformed: (reason) => deps.malformed(reason),
    });
    deps.logger.info({ botId: deps.botId, pingIntervalMs: endpoint.pingIntervalMs }, 'Lark long connection open');
    const client = larkClient(config);
    return {
      ended: socket.ended,
      close: (reason) => socket.close(reason),
      send: async (route, message, onWritten) => {
        const text = plainText(message);
        if (!text) return {};
        // The Open API call gives no sign between leaving and being answered: from here it may show.
        onWritten?.();
        try {
          return await sendLarkText(client, route, text);
        } catch (err) {
          if (err instanceof LarkRefusedError) throw new PlatformRejectedError(err.message);
          throw err;
        }
      },
    };
  },
};
