import { z } from 'zod';
import { plainText } from '@conveyor/contracts';
import { PlatformRejectedError, type ConnectionDeps, type OpenConnection, type PlatformConnection } from '@conveyor/platform-kit';
import { describeSlackError, isSlackPlatformError, slackWebClient, truncateSlackText } from './adapter.js';
import type { SlackConfig } from './config.js';
import { parseSlackBody, slackQuery } from './parse.js';
import { SlackSocketModeSocket, type SlackEnvelope } from './socket-mode.js';

/**
 * Envelopes of one connection published or waiting to be; past this an envelope is left
 * unacknowledged (Slack redelivers it) rather than buffered without bound.
 */
const MAX_QUEUED_INBOUND = 1_000;

const ConnectionsOpen = z.looseObject({ url: z.string().regex(/^wss?:\/\//, 'a WebSocket URL') });

/** Whether a bot is in Socket Mode: it has an app-level token. */
export const inSocketMode = (config: SlackConfig): boolean => config.app_token !== '';

/** What handling envelopes needs: the gateway's side of the connection, and the acknowledgement on the socket. */
export type SocketModeInboundDeps = Pick<ConnectionDeps<SlackConfig>, 'botId' | 'config' | 'logger' | 'publish' | 'malformed'> & {
  /** Sends `{envelope_id}`; false when the socket is gone (then Slack redelivers the envelope). */
  ack(envelopeId: string): boolean;
};

/**
 * Handles the envelopes of one Socket Mode connection. An `events_api` envelope carries the Events
 * API body the webhook gets and is parsed the same way (parseSlackBody), so both paths make the same
 * query. A message is acknowledged only after it was published: a publish that fails leaves the
 * envelope to Slack's redelivery, and a redelivery of one that was published (an acknowledgement
 * lost with the socket) is dropped by its event_id, so nothing is lost and nothing answered twice.
 * Messages are published one after another, keeping a chat's order. Everything else is acknowledged
 * at once: events that ask for no answer, envelope types Conveyor does not serve (slash commands,
 * interactivity), and bodies that can never become a query (reported as malformed).
 */
export function socketModeInbound(deps: SocketModeInboundDeps): (envelope: SlackEnvelope) => void {
  let queued = 0;
  let chain: Promise<void> = Promise.resolve();
  const ack = (envelopeId: string) => {
    if (!deps.ack(envelopeId)) deps.logger.info({ botId: deps.botId, envelopeId }, 'Slack envelope not acknowledged: the socket is gone; Slack will send it again');
  };
  return (envelope) => {
    const envelopeId = envelope.envelope_id;
    if (envelope.type !== 'events_api') {
      deps.logger.info({ botId: deps.botId, envelopeId, type: envelope.type }, 'Slack envelope type not served; acknowledged');
      return ack(envelopeId);
    }
    const parsed = parseSlackBody(envelope.payload, deps.botId);
    switch (parsed.kind) {
      case 'malformed':
        deps.malformed(`events_api payload: ${parsed.error}`, { envelopeId });
        // Slack would only redeliver the same body; acknowledging ends that.
        return ack(envelopeId);
      case 'challenge':
      case 'ignored':
        return ack(envelopeId);
      case 'message': {
        const eventId = parsed.inbound.eventId;
        if (queued >= MAX_QUEUED_INBOUND) return deps.malformed('inbound queue full; envelope left for Slack to redeliver', { envelopeId, eventId });
        queued++;
        const query = slackQuery(parsed.inbound, deps.config['enable-stream-reply']);
        chain = chain
          .then(async () => {
            await deps.publish(query);
            ack(envelopeId);
          })
          .catch((err: unknown) => deps.logger.warn({ err, botId: deps.botId, envelopeId, eventId, retryAttempt: envelope.retry_attempt }, 'Slack message not published; left unacknowledged for Slack to redeliver'))
          .finally(() => void queued--);
        return;
      }
    }
  };
}

/**
 * Slack Socket Mode: for a bot with an app-level token, the gateway replica holding the bot asks
 * `apps.connections.open` for a WebSocket URL, connects, and publishes the events that arrive there.
 * Replies stay on the Web API (the dispatcher's adapter); `send` posts a whole reply the same way.
 */
export const slackConnection: PlatformConnection<SlackConfig> = {
  holds: inSocketMode,
  async open(deps): Promise<OpenConnection> {
    const config = deps.config;
    // No retries or rate-limit waits here: a failed open is retried by the supervisor with its backoff.
    const apps = slackWebClient(config.app_token, config, { retries: 0, rejectRateLimited: true });
    const response = await apps.apps.connections.open().catch((err: unknown) => {
      throw new Error(`Slack apps.connections.open failed: ${describeSlackError(err)}`);
    });
    const opened = ConnectionsOpen.safeParse(response);
    if (!opened.success) throw new Error(`Slack apps.connections.open answered without a WebSocket URL: ${opened.error.issues[0]?.message ?? 'invalid'}`);
    const url = opened.data.url;
    let socket: SlackSocketModeSocket | undefined;
    const onEnvelope = socketModeInbound({ ...deps, ack: (envelopeId) => socket?.ack(envelopeId) ?? false });
    socket = await SlackSocketModeSocket.connect({
      url,
      onEnvelope,
      onMalformed: (reason, envelopeId) => deps.malformed(reason, envelopeId !== undefined ? { envelopeId } : {}),
    });
    const open = socket;
    deps.logger.info({ botId: deps.botId }, 'Slack Socket Mode connected');
    const replies = slackWebClient(config.bot_token, config);
    return {
      ended: open.ended,
      close: (reason) => open.close(reason),
      send: async (route, message, onWritten) => {
        const text = truncateSlackText(plainText(message));
        if (!text) return {};
        // The Web API gives no moment between writing the request and its answer: count it written now.
        onWritten?.();
        try {
          const posted = await replies.chat.postMessage({ channel: route.sessionId, text });
          return posted.ts ? { messageId: posted.ts } : {};
        } catch (err) {
          if (isSlackPlatformError(err)) throw new PlatformRejectedError(`slack: ${describeSlackError(err)}`);
          throw err;
        }
      },
    };
  },
};
