import type { MessageComponent } from '@conveyor/contracts';
import { pyJsonDumps } from './python.js';

/**
 * A component as LangBot's SDK dumps it into a callback: every declared field, defaults
 * included, in SDK field order. Key order matters because the body is signed byte for byte.
 */
export function componentToWire(c: MessageComponent): Record<string, unknown> {
  switch (c.type) {
    case 'Plain':
      return { type: 'Plain', text: c.text };
    case 'At':
      return { type: 'At', target: c.target, display: c.display ?? '' };
    case 'AtAll':
      return { type: 'AtAll' };
    case 'Image':
      return { type: 'Image', image_id: c.image_id ?? '', url: c.url ?? '', path: c.path ?? '', base64: c.base64 ?? '' };
    case 'Voice':
      return {
        type: 'Voice',
        voice_id: c.voice_id ?? '',
        url: c.url ?? '',
        path: c.path ?? '',
        base64: c.base64 ?? '',
        length: c.length ?? 0,
      };
    case 'File':
      return {
        type: 'File',
        id: c.id ?? '',
        name: c.name ?? '',
        size: c.size ?? 0,
        url: c.url ?? '',
        path: c.path ?? '',
        base64: c.base64 ?? '',
      };
    case 'Quote':
      return {
        type: 'Quote',
        id: c.id ?? null,
        group_id: c.group_id ?? null,
        sender_id: c.sender_id ?? null,
        target_id: c.target_id ?? null,
        origin: (c.origin ?? []).map(componentToWire),
      };
    case 'Forward': {
      const d = c.display ?? { title: '', brief: '', source: '', preview: [], summary: '' };
      return {
        type: 'Forward',
        display: {
          title: d.title ?? '',
          brief: d.brief ?? '',
          source: d.source ?? '',
          preview: d.preview ?? [],
          summary: d.summary ?? '',
        },
        node_list: (c.node_list ?? []).map((n) => ({
          sender_id: n.sender_id ?? null,
          sender_name: n.sender_name ?? '',
          message_chain: (n.message_chain ?? []).map(componentToWire),
          message_id: n.message_id ?? 0,
        })),
      };
    }
    case 'Source':
      // LangBot would emit a datetime here and fail to encode it; Unix seconds keep it JSON-safe.
      return { type: 'Source', id: c.id, timestamp: c.timestamp };
    case 'Unknown':
      return { type: 'Unknown', text: c.text ?? '' };
  }
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * Python's naive `datetime.now().isoformat()` in the process's local time zone:
 * `YYYY-MM-DDTHH:MM:SS.ffffff`, the fraction omitted when it is zero. `microsecond` (0–999999)
 * replaces the Date's millisecond-precision fraction when the caller has a finer clock.
 */
export function naiveLocalIsoTimestamp(date: Date, microsecond?: number): string {
  const us = microsecond ?? date.getMilliseconds() * 1000;
  const base =
    `${pad(date.getFullYear(), 4)}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return us === 0 ? base : `${base}.${pad(us, 6)}`;
}

export interface CallbackBodyInput {
  sessionId: string;
  /** The turn's accepted_message_id; "" for proactive pushes. */
  replyTo: string;
  sequence: number;
  isFinal: boolean;
  stream: boolean;
  message: readonly MessageComponent[];
  /** When the reply was produced. */
  timestamp: Date;
  /** Sub-second part in microseconds, overriding the Date's milliseconds (see naiveLocalIsoTimestamp). */
  microsecond?: number;
}

/** The exact callback body LangBot sends: `json.dumps(payload, ensure_ascii=False)`. */
export function callbackBody(input: CallbackBodyInput): string {
  return pyJsonDumps({
    session_id: input.sessionId,
    reply_to: input.replyTo,
    sequence: input.sequence,
    is_final: input.isFinal,
    stream: input.stream,
    message: input.message.map(componentToWire),
    timestamp: naiveLocalIsoTimestamp(input.timestamp, input.microsecond),
  });
}

/** A streamed chunk closes the turn only if marked final and it carries no tool calls, as in LangBot. */
export function isFinalForChunk(chunkIsFinal: boolean, hasToolCalls: boolean): boolean {
  return chunkIsFinal && !hasToolCalls;
}
