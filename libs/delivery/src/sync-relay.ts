import { redisKeys, type MessageChain } from '@conveyor/contracts';

/**
 * HTTP-bot `/sync` (§11) across replicas: the ingress replica holding the call registers the session
 * in Redis (`SET NX`, so a second /sync for the session gets 409) with its instance id; the dispatcher
 * replica sending a part of that session finds the registration and sends the part to that ingress
 * over core NATS request/reply (subject `topology.subjects.syncReply(instance)`), trace context in
 * the headers. An unanswered request (the ingress died, or already answered) falls back to the callback.
 */
export function syncKey(prefix: string, botId: string, sessionId: string): string {
  return redisKeys(prefix).syncWaiter(botId, sessionId);
}

export interface SyncPart {
  botId: string;
  sessionId: string;
  message: MessageChain;
  isFinal: boolean;
  stream: boolean;
  sequence: number;
}

export interface SyncAck {
  taken: boolean;
}
