import type { PlatformConnection } from '@conveyor/platform-kit';
import { DingtalkApi } from './api.js';
import { sendWholeReply } from './adapter.js';
import { streamsReplies, type DingtalkConfig } from './config.js';
import { parseRobotMessage, resolvePictures } from './parse.js';
import { DINGTALK_ROBOT_TOPIC, DingtalkStreamSocket } from './stream.js';

/** Inbound messages of one connection waiting to be published; past this a message is not acknowledged, so DingTalk delivers it again later. */
const MAX_QUEUED_INBOUND = 1_000;

/** Pictures' download URLs, and replies the gateway itself sends (none in normal operation: the dispatcher answers over HTTP). */
const api = new DingtalkApi();

/**
 * DingTalk Stream mode: the gateway replica holding a `mode: stream` bot keeps the app's Stream
 * connection. Each robot message becomes a query (its pictures' download codes exchanged for URLs) (published in arrival order, fenced and
 * de-duplicated by msgId, so a message DingTalk delivers again, or to a new holder, is one query)
 * and its CALLBACK is acknowledged once published; a message that can never become a query is
 * logged, counted and acknowledged. Replies do not need the connection: the dispatcher's adapter
 * sends them over HTTP.
 */
export const dingtalkConnection: PlatformConnection<DingtalkConfig> = {
  holds: (config) => config.mode === 'stream',
  async open(deps) {
    const { config, botId } = deps;
    let queued = 0;
    let chain: Promise<void> = Promise.resolve();
    const socket = await DingtalkStreamSocket.open({
      apiBaseUrl: config.api_base_url,
      clientId: config.client_id,
      clientSecret: config.client_secret,
      onMalformed: (reason) => deps.malformed(reason),
      onCallbackFailed: (err) => deps.logger.warn({ err, botId }, 'DingTalk message not published; left unacknowledged for DingTalk to deliver again'),
      onCallback: async (topic, data) => {
        if (topic !== DINGTALK_ROBOT_TOPIC) return;
        let json: unknown;
        try {
          json = JSON.parse(data);
        } catch {
          return deps.malformed('robot message: data is not JSON');
        }
        const parsed = parseRobotMessage(json, config, botId, streamsReplies(config));
        if (!parsed.ok) return deps.malformed(`robot message: ${parsed.error}`);
        if (!parsed.query) return;
        const query = parsed.query;
        if (queued >= MAX_QUEUED_INBOUND) {
          deps.malformed('inbound queue full; message left for DingTalk to deliver again', parsed.ref);
          throw new Error('inbound queue full');
        }
        queued++;
        const published = chain
          .then(async () => {
            const messageChain = await resolvePictures(query.messageChain, (code) => api.downloadUrl(config, code), (reason) => deps.malformed(`picture not downloaded: ${reason}`, parsed.ref));
            await deps.publish({ ...query, messageChain });
          })
          .finally(() => void queued--);
        chain = published.catch(() => undefined);
        return published;
      },
    });
    deps.logger.info({ botId }, 'DingTalk Stream connection open');
    return {
      ended: socket.ended,
      close: (reason) => socket.close(reason),
      send: async (route, message, onWritten) => {
        onWritten?.();
        await sendWholeReply(api, config, route, message);
        return {};
      },
    };
  },
};
