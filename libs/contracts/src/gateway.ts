import { z } from 'zod';
import { MessageChainSchema } from './message-chain.js';
import { ReplyRoute } from './messages.js';

/**
 * A reply part for a platform reached over a connection a gateway replica holds (OneBot). The
 * dispatcher's adapter sends it to `gatewaySend(botId)` and waits for the `GatewaySendReply`.
 * `partId` (query id and part key) lets the gateway recognise a part it already sent when the
 * request is retried after a lost answer.
 */
export const GatewaySendRequest = z.object({
  v: z.literal(1),
  partId: z.string().min(1).max(400),
  route: ReplyRoute,
  message: MessageChainSchema,
  /**
   * A snapshot of a reply streamed in place (only for a platform that asked its relay for them):
   * the stream's id, the same for every snapshot of one reply, and whether this is the last. A
   * gateway that predates it sends the snapshot as a whole message, so gateways are updated before
   * dispatchers.
   */
  stream: z.object({ id: z.string().min(1).max(200), final: z.boolean() }).optional(),
}).meta({ id: 'GatewaySendRequest/1' });
export type GatewaySendRequest = z.infer<typeof GatewaySendRequest>;

/**
 * Why a part was not sent. `not_owner`, `not_connected` and `in_progress` are passing states of a
 * takeover or a reconnection: the sender retries. `rejected` (the platform refused it) and `invalid`
 * (the request does not parse) do not get better by retrying.
 */
export const GatewaySendFailure = z.enum(['not_owner', 'not_connected', 'in_progress', 'rejected', 'invalid']);
export type GatewaySendFailure = z.infer<typeof GatewaySendFailure>;

export const GatewaySendReply = z.discriminatedUnion('ok', [
  z.object({ v: z.literal(1), ok: z.literal(true), messageId: z.string().max(200).optional(), duplicate: z.boolean().optional() }),
  z.object({ v: z.literal(1), ok: z.literal(false), code: GatewaySendFailure, error: z.string().max(2_000) }),
]).meta({ id: 'GatewaySendReply/1' });
export type GatewaySendReply = z.infer<typeof GatewaySendReply>;

/** Whether a failed gateway send may succeed when tried again shortly (another replica takes over, a reconnection). */
export function isPassingGatewayFailure(code: GatewaySendFailure): boolean {
  return code === 'not_owner' || code === 'not_connected' || code === 'in_progress';
}
