import { z } from 'zod';

/** A OneBot id: numbers on the wire (QQ numbers, message ids), strings from some implementations. */
const Id = z.union([z.number().int(), z.string().regex(/^-?\d{1,20}$/)]).transform(String);

/** One message segment, `{type, data}` (OneBot v11 array format). */
export const Segment = z.object({ type: z.string().min(1).max(64), data: z.record(z.string(), z.unknown()).nullish().transform((d) => d ?? {}) });
export type Segment = z.output<typeof Segment>;

const Sender = z.looseObject({
  user_id: Id.optional(),
  nickname: z.string().max(10_000).optional(),
  card: z.string().max(10_000).optional(),
  role: z.string().max(64).optional(),
});

/** `post_type: message`: a private or group message. `message` is a segment array, or a CQ-code string. */
export const MessageEvent = z.looseObject({
  post_type: z.literal('message'),
  message_type: z.enum(['private', 'group']),
  time: z.number().int().optional(),
  self_id: Id,
  message_id: Id,
  user_id: Id,
  group_id: Id.optional(),
  message: z.union([z.array(Segment).max(1_000), z.string().max(1_000_000)]),
  sender: Sender.optional(),
});
export type MessageEvent = z.output<typeof MessageEvent>;

/** The answer to an action, matched to its call by `echo`. */
export const ActionResponse = z.looseObject({
  status: z.string(),
  retcode: z.number().int(),
  data: z.unknown().optional(),
  echo: z.string().optional(),
  message: z.string().optional(),
  wording: z.string().optional(),
});
export type ActionResponse = z.output<typeof ActionResponse>;

export type Frame =
  | { kind: 'message'; event: MessageEvent }
  | { kind: 'response'; response: ActionResponse & { echo: string } }
  | { kind: 'meta'; type: string; subType?: string }
  | { kind: 'ignored'; postType: string }
  | { kind: 'malformed'; reason: string };

const MAX_FRAME_CHARS = 4 * 1024 * 1024;

/**
 * One WebSocket frame from the implementation, classified. Never throws: a frame that is no JSON
 * object, or a message event missing what a query needs, is `malformed` with the reason (the first
 * failing field named).
 */
export function parseFrame(raw: string): Frame {
  if (raw.length > MAX_FRAME_CHARS) return { kind: 'malformed', reason: `frame larger than ${MAX_FRAME_CHARS} characters` };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { kind: 'malformed', reason: 'frame is not JSON' };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { kind: 'malformed', reason: 'frame is not a JSON object' };
  const obj = json as Record<string, unknown>;
  if (typeof obj.echo === 'string' && 'retcode' in obj) {
    const r = ActionResponse.safeParse(obj);
    if (!r.success) return { kind: 'malformed', reason: `action response: ${describe(r.error)}` };
    return { kind: 'response', response: { ...r.data, echo: obj.echo } };
  }
  const postType = obj.post_type;
  if (postType === 'message') {
    const m = MessageEvent.safeParse(obj);
    if (!m.success) return { kind: 'malformed', reason: `message event: ${describe(m.error)}` };
    if (m.data.message_type === 'group' && m.data.group_id === undefined) return { kind: 'malformed', reason: 'message event: group_id is missing on a group message' };
    return { kind: 'message', event: m.data };
  }
  if (postType === 'meta_event') {
    return { kind: 'meta', type: String(obj.meta_event_type ?? ''), ...(typeof obj.sub_type === 'string' ? { subType: obj.sub_type } : {}) };
  }
  if (typeof postType === 'string') return { kind: 'ignored', postType };
  return { kind: 'malformed', reason: 'frame has neither post_type nor echo' };
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid';
}
