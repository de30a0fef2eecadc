import { randomUUID } from 'node:crypto';
import type { MessageComponent } from '@conveyor/contracts';
import { componentToWire } from './callback.js';

/** `in_` + a UUID4 in hex (§5.1); the docs' ULID-looking example is not what LangBot sends. */
export function newAcceptedMessageId(): string {
  return `in_${randomUUID().replaceAll('-', '')}`;
}

/** 202 body for a push. `aggregating` is always true in LangBot, buffered or not (§7.1). */
export function acceptedBody(sessionId: string, acceptedMessageId: string) {
  return {
    code: 0,
    msg: 'accepted',
    data: { session_id: sessionId, accepted_message_id: acceptedMessageId, aggregating: true },
  } as const;
}

/** 200 body for /sync: every reply part's components, in emission order, also on timeout (§11). */
export function syncOkBody(sessionId: string, replyTo: string, message: readonly MessageComponent[]) {
  return {
    code: 0,
    msg: 'ok',
    data: { session_id: sessionId, reply_to: replyTo, message: message.map(componentToWire) },
  } as const;
}

/** 200 body for /reset (§14). */
export function resetOkBody(sessionId: string, removed: boolean) {
  return { code: 0, msg: 'reset', data: { session_id: sessionId, removed } } as const;
}
