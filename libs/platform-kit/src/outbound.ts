import type { NatsConnection } from '@nats-io/transport-node';
import type { MessageChain, MessageComponent, ReplyRoute, Topology } from '@conveyor/contracts';
import type { BotConfigs } from './bot-configs.js';
import type { RedisClient } from '@conveyor/redis-scripts';

/** One reply part as the pipeline's send stage hands it over (LangBot reply_message / reply_message_chunk). */
export interface OutboundReply {
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
}

export type SendResult = { delivered: true; queued?: boolean } | { delivered: false; reason: string };

/** Per-reply state an adapter may keep (Telegram: the placeholder's message id), stored with the reply in Redis. */
export interface ReplyState {
  get(name: string): Promise<string | null>;
  set(name: string, value: string): Promise<void>;
}

export interface DeliveryContext {
  queryId: string;
  /** The part's identity (`attempt:seq:sub`), stable when a part is sent again after a crash. */
  partKey: string;
  /** 1-based count of streamed snapshots of this reply so far, coalesced ones included (LangBot's msg_sequence). */
  chunkOrdinal: number;
  /**
   * The session's callback number of this part (LangBot's HTTP-bot numbering: 1 after a final callback, else
   * one more), assigned when the part is taken for sending, so numbers rise in the order parts go out.
   */
  sequence: number;
  /** When the part was first taken for sending; the same when a crash makes it go out again. */
  timestamp: Date;
  state: ReplyState;
  signal?: AbortSignal;
  /**
   * False when no call held for this reply session (an HTTP-bot `/sync`) was registered lately, read
   * when the part was taken: the adapter need not look for one. Undefined when not known (look).
   */
  heldCallPossible?: boolean;
}

/**
 * One platform's outbound side. The delivery layer (libs/delivery) orders, coalesces and retries
 * parts and calls `deliver` once per part; the adapter only talks to the platform. A part may be
 * delivered again after a dispatcher crash, so `deliver` should be idempotent where the platform
 * allows it (keep what is needed for that in `ctx.state`).
 */
export interface PlatformAdapter {
  /** The platform's name, as `ReplyRoute.adapter` carries it. */
  readonly name: string;
  deliver(route: ReplyRoute, reply: OutboundReply, ctx: DeliveryContext): Promise<SendResult>;
}

export interface PlatformLogger {
  warn(obj: object, msg: string): void;
}

/** What a dispatcher replica hands every platform's outbound factory. */
export interface OutboundDeps {
  redis: RedisClient;
  /** The deployment's Redis key prefix (`topology.prefix`). */
  prefix: string;
  topology: Topology;
  nc: NatsConnection;
  /** Bot settings by id, cached briefly; an adapter parses `adapterConfig` with its own schema. */
  configs: BotConfigs;
  logger: PlatformLogger;
  /** Tests may route a platform's HTTP calls elsewhere; production uses the global fetch. */
  fetchImpl?: typeof fetch;
}

/**
 * A text as messages of at most `max` characters: cut at the last line break (else space) in the
 * second half of a piece, else hard; surrogate pairs are never cut in two. Platforms that refuse
 * long messages send the pieces one after another.
 */
export function splitMessageText(text: string, max: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf('\n', max);
    if (cut < max / 2) cut = rest.lastIndexOf(' ', max);
    if (cut < max / 2) cut = max;
    const code = rest.charCodeAt(cut - 1);
    if (cut === max && code >= 0xd800 && code <= 0xdbff) cut--;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^[\n ]/, '');
  }
  if (rest) out.push(rest);
  return out;
}

/** How a platform writes mentions in a message's text. */
export interface MentionMarks {
  at(target: string): string;
  atAll: string;
}

/**
 * A reply chain as one message text, for platforms whose messages are text with inline mentions:
 * text as it is, At and AtAll as the platform writes them, images, files and voice by URL on their
 * own line, a forward's messages one after another. An answer of only white space is ''.
 */
export function chainToMessageText(chain: readonly MessageComponent[], marks: MentionMarks): string {
  let out = '';
  for (const c of chain) {
    switch (c.type) {
      case 'Plain':
        out += c.text;
        break;
      case 'At':
        out += marks.at(String(c.target));
        break;
      case 'AtAll':
        out += marks.atAll;
        break;
      case 'Image':
      case 'File':
      case 'Voice':
        if (c.url) out += `${out && !out.endsWith('\n') ? '\n' : ''}${c.url}\n`;
        break;
      case 'Forward':
        for (const node of c.node_list) out += chainToMessageText(node.message_chain, marks);
        break;
      case 'Unknown':
        out += c.text;
        break;
      default:
        break;
    }
  }
  return out.trim() ? out : '';
}
