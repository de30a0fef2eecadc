import { z } from 'zod';
import { LauncherType } from './messages.js';
import { MessageChainSchema } from './message-chain.js';

const V1 = z.literal(1);

/**
 * A message to a chat of a bot that answers no message of that chat (LangBot's `send_message`): a
 * plugin's through the host API, an operator's from the console. Core NATS request/reply on
 * `topology(prefix).subjects.directSend`; dispatcher replicas answer in the queue group
 * `direct-send`, each sending it straight to the platform (no reply stages, no session lease).
 */
export const DirectSendRequest = z.object({
  v: V1,
  botId: z.string().min(1).max(200),
  /** The chat: a person by user id or a group by group id, as the platform names them. */
  target: z.object({ type: LauncherType, id: z.string().min(1).max(1000) }),
  messageChain: MessageChainSchema,
  /** Who sends it, for logs and spans: `plugin:<name>` or `operator:<user>`. */
  origin: z.string().min(1).max(300),
}).meta({ id: 'DirectSendRequest/1' });
export type DirectSendRequest = z.infer<typeof DirectSendRequest>;

/** Why a direct send did not go out: an unknown or disabled bot, a chain it cannot carry, or the platform's refusal. */
export const DirectSendErrorCode = z.enum(['not_found', 'disabled', 'invalid', 'failed']);
export type DirectSendErrorCode = z.infer<typeof DirectSendErrorCode>;

export const DirectSendReply = z.discriminatedUnion('ok', [
  z.object({ v: V1, ok: z.literal(true) }),
  z.object({ v: V1, ok: z.literal(false), error: z.object({ code: DirectSendErrorCode, message: z.string().max(2_000) }) }),
]).meta({ id: 'DirectSendReply/1' });
export type DirectSendReply = z.infer<typeof DirectSendReply>;
