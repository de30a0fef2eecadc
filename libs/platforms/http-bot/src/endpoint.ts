// LangBot's HTTP-bot protocol as one request flow: a request already routed to an enabled
// `http-bot` bot and read whole (the serving process bounds the body) comes back as the response to
// write. The process provides what the flow touches outside itself: the bus, the conversation store
// and the `/sync` holds. Exceptions from those ports propagate; the process maps them (overload,
// an envelope over the bus bound) to their responses.
import type { LauncherType, MessageComponent } from '@conveyor/contracts';
import type { InboundMessage } from '@conveyor/platform-kit';
import { safeParseAdapterConfig, syncWaitMs, type AdapterConfig } from './adapter-config.js';
import { HttpBotError } from './errors.js';
import { parseInboundRequest, type HeaderSource } from './parse.js';
import { HTTP_BOT } from './platform.js';
import { acceptedBody, newAcceptedMessageId, resetOkBody, syncOkBody } from './responses.js';

/** A message the flow accepted, as it is published. */
export interface AcceptedHttpBotMessage extends InboundMessage {
  botId: string;
  acceptedMessageId: string;
  /** The caller's idempotency key: a replay of it is refused on every replica. */
  idempotencyKey?: string;
}

/** A `/sync` call held for its session's reply parts. */
export interface SyncHold {
  /** The session's parts, once the reply ended or the wait ran out; releases the hold. */
  wait(): Promise<MessageComponent[]>;
  release(): Promise<void>;
}

export interface HttpBotPorts {
  publish(message: AcceptedHttpBotMessage): Promise<{ duplicate: boolean }>;
  /** Clears the session's conversation; whether there was one to clear. */
  resetConversation(botId: string, launcherType: LauncherType, sessionId: string): Promise<boolean>;
  /** Holds the call for the session's parts; null when another call for it already waits (on any replica). */
  holdSync(botId: string, sessionId: string, waitMs: number): Promise<SyncHold | null>;
}

export interface HttpBotLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface HttpBotRequest {
  botId: string;
  /** The bot's stored settings, as loaded (the same object until the row is read again). */
  adapterConfig: unknown;
  /** The path after `/bots/{id}`: '' (push), 'sync' or 'reset'. */
  subPath: string;
  rawBody: Buffer;
  headers: HeaderSource;
  now: Date;
}

export interface HttpBotResponse {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

export class HttpBotEndpoint {
  /** Settings objects (as loaded) already reported as refused or as accepting unsigned requests. */
  private readonly reported = new WeakSet<object>();

  constructor(private readonly ports: HttpBotPorts, private readonly logger: HttpBotLogger) {}

  async serve(request: HttpBotRequest): Promise<HttpBotResponse> {
    const { botId } = request;
    const adapterConfig = this.settingsOf(botId, request.adapterConfig);
    if (!adapterConfig) return HttpBotError.misconfigured();
    const parsed = parseInboundRequest({ subPath: request.subPath, rawBody: request.rawBody, headers: request.headers, adapterConfig, now: request.now });
    if (!parsed.ok) return parsed.error;

    if (parsed.kind === 'reset') {
      const removed = await this.ports.resetConversation(botId, parsed.launcherType, parsed.sessionId);
      return { status: 200, body: resetOkBody(parsed.sessionId, removed) };
    }
    const acceptedMessageId = newAcceptedMessageId();
    const { message } = parsed;
    // /sync: one waiting call per session across replicas; the session's parts come here, not to the callback.
    const sync = parsed.kind === 'sync' ? await this.ports.holdSync(botId, message.sessionId, syncWaitMs(adapterConfig)) : undefined;
    if (sync === null) return HttpBotError.syncInFlight();
    let duplicate: boolean;
    try {
      ({ duplicate } = await this.ports.publish({
        botId,
        acceptedMessageId,
        sessionId: message.sessionId,
        launcherType: message.launcherType,
        senderId: message.senderId,
        senderName: message.senderName,
        ...(message.groupName !== undefined ? { groupName: message.groupName } : {}),
        messageChain: message.messageChain,
        ...(parsed.idempotencyKey ? { idempotencyKey: parsed.idempotencyKey } : {}),
      }));
    } catch (err) {
      await sync?.release();
      throw err;
    }
    if (duplicate) {
      await sync?.release();
      return HttpBotError.idempotencyReplay();
    }
    if (sync) return { status: 200, body: syncOkBody(message.sessionId, acceptedMessageId, await sync.wait()) };
    return { status: 202, body: acceptedBody(message.sessionId, acceptedMessageId) };
  }

  /**
   * The bot's settings, or undefined when its schema refuses them (a row stored before that was
   * refused). Each loaded row is reported once: a misconfigured one as an error naming the setting,
   * one with signature_required: false as a warning, since then anybody who can reach the ingress
   * can post as any user of that bot.
   */
  private settingsOf(botId: string, raw: unknown): AdapterConfig | undefined {
    const parsed = safeParseAdapterConfig(raw);
    const firstSight = typeof raw === 'object' && raw !== null && !this.reported.has(raw);
    if (firstSight) this.reported.add(raw);
    if (!parsed.success) {
      if (firstSight) {
        const fields = parsed.error.issues.map((i) => i.path.join('.') || '(config)');
        this.logger.error({ botId, adapter: HTTP_BOT, fields, issues: parsed.error.issues.map((i) => i.message) }, `http-bot bot misconfigured (${fields.join(', ')}); its requests are refused`);
      }
      return undefined;
    }
    if (firstSight && !parsed.data.signature_required) {
      this.logger.warn({ botId, adapter: HTTP_BOT, signatureRequired: false }, 'http-bot bot accepts unsigned requests (signature_required: false)');
    }
    return parsed.data;
  }
}
