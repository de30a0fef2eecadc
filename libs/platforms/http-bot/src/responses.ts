import { randomUUID } from 'node:crypto';
import type { MessageComponent } from '@conveyor/contracts';
import { componentToWire } from './callback.js';

/** `in_` + a UUID4 in hex, as LangBot sends; the ULID-looking example in LangBot's docs is not what it sends. */
export function newAcceptedMessageId(): string {
  return `in_${randomUUID().replaceAll('-', '')}`;
}

/** 202 body for a push. `aggregating` is always true in LangBot, buffered or not. */
export function acceptedBody(sessionId: string, acceptedMessageId: string) {
  return {
    code: 0,
    msg: 'accepted',
    data: { session_id: sessionId, accepted_message_id: acceptedMessageId, aggregating: true },
  } as const;
}

/** 200 body for /sync: every reply part's components, in emission order, also on timeout, as in LangBot. */
export function syncOkBody(sessionId: string, replyTo: string, message: readonly MessageComponent[]) {
  return {
    code: 0,
    msg: 'ok',
    data: { session_id: sessionId, reply_to: replyTo, message: message.map(componentToWire) },
  } as const;
}

/** 200 body for /reset. */
export function resetOkBody(sessionId: string, removed: boolean) {
  return { code: 0, msg: 'reset', data: { session_id: sessionId, removed } } as const;
}
