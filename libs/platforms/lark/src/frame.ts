import protobuf from 'protobufjs';
import { z } from 'zod';

/**
 * The frame of Lark's long connection (`pbbp2.Frame`), as the official SDKs define it (the Node SDK's
 * generated `pbbp2` module, the Go SDK's `ws/pbbp2.pb.go`). Every WebSocket message is one frame,
 * binary protobuf. Kept as schema text so encoder and decoder come from one definition.
 */
const PBBP2_SCHEMA = `
syntax = "proto2";
package pbbp2;
message Header {
  required string key = 1;
  required string value = 2;
}
message Frame {
  required uint64 SeqID = 1;
  required uint64 LogID = 2;
  required int32 service = 3;
  required int32 method = 4;
  repeated Header headers = 5;
  optional string payloadEncoding = 6;
  optional string payloadType = 7;
  optional bytes payload = 8;
  optional string LogIDNew = 9;
}
`;

const FrameType = protobuf.parse(PBBP2_SCHEMA).root.lookupType('pbbp2.Frame');

/** `method` of a frame: control frames carry ping/pong, data frames events. */
export const LARK_FRAME_CONTROL = 0;
export const LARK_FRAME_DATA = 1;

export interface LarkFrameHeader {
  key: string;
  value: string;
}

/**
 * A decoded frame. The 64-bit ids are JavaScript numbers, as the official Node SDK reads them (it
 * turns protobufjs' Long support off for the whole process); Lark's ids stay below 2^53.
 */
export interface LarkFrame {
  SeqID: number;
  LogID: number;
  service: number;
  method: number;
  headers: LarkFrameHeader[];
  payloadEncoding?: string | undefined;
  payloadType?: string | undefined;
  payload?: Uint8Array | undefined;
  LogIDNew?: string | undefined;
}

const DecodedFrame = z.object({
  SeqID: z.number().int().nonnegative(),
  LogID: z.number().int().nonnegative(),
  service: z.number().int(),
  method: z.number().int(),
  headers: z.array(z.object({ key: z.string(), value: z.string() })).default([]),
  payloadEncoding: z.string().optional(),
  payloadType: z.string().optional(),
  payload: z.instanceof(Uint8Array).optional(),
  LogIDNew: z.string().optional(),
});

export function encodeLarkFrame(frame: LarkFrame): Uint8Array {
  return FrameType.encode(FrameType.fromObject(frame)).finish();
}

/** Decodes one WebSocket message; null when it is no pbbp2 frame. */
export function decodeLarkFrame(data: Uint8Array): LarkFrame | null {
  try {
    const object = FrameType.toObject(FrameType.decode(data), { longs: Number, defaults: false, arrays: true });
    const parsed = DecodedFrame.safeParse(object);
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function frameHeader(frame: LarkFrame, key: string): string | undefined {
  return frame.headers.find((h) => h.key === key)?.value;
}

/** The ping the client sends every PingInterval (a control frame of the connection's service). */
export function larkPingFrame(service: number): LarkFrame {
  return { SeqID: 0, LogID: 0, service, method: LARK_FRAME_CONTROL, headers: [{ key: 'type', value: 'ping' }] };
}

/**
 * The answer to an event: the event's own frame (its ids and headers, so Lark knows which event),
 * plus `biz_rt` (milliseconds spent), with `{"code": status}` as payload. 200 tells Lark the event
 * was taken; anything else makes it deliver the event again later.
 */
export function larkAckFrame(frame: LarkFrame, status: number, elapsedMs: number): LarkFrame {
  return {
    ...frame,
    headers: [...frame.headers.filter((h) => h.key !== 'biz_rt'), { key: 'biz_rt', value: String(Math.max(0, Math.round(elapsedMs))) }],
    payload: new TextEncoder().encode(JSON.stringify({ code: status })),
  };
}

/** Parts of one split event that may be waiting at once; more is refused rather than buffered. */
export const MAX_PENDING_EVENTS = 64;
/** Parts one event may be split into. */
export const MAX_EVENT_PARTS = 64;
/** Bytes an event may have once its parts are joined (Lark's events are far smaller). */
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;
/** An event whose parts have not all arrived by then is given up (Lark sends them back to back). */
export const EVENT_PARTS_TTL_MS = 10_000;

export type AssembledPart =
  | { kind: 'complete'; payload: Buffer }
  | { kind: 'partial' }
  | { kind: 'invalid'; reason: string };

interface Pending {
  parts: (Uint8Array | undefined)[];
  bytes: number;
  firstAt: number;
}

/**
 * Joins an event Lark split into `sum` frames (headers `message_id`, `sum`, `seq` 0-based) back into
 * one payload. Bounded: at most MAX_PENDING_EVENTS incomplete events, each at most MAX_EVENT_PARTS
 * parts and MAX_EVENT_BYTES; parts older than EVENT_PARTS_TTL_MS are dropped.
 */
export class LarkEventAssembler {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly now: () => number = Date.now) {}

  add(frame: LarkFrame): AssembledPart {
    const messageId = frameHeader(frame, 'message_id') ?? '';
    const sum = Number(frameHeader(frame, 'sum') ?? '1');
    const seq = Number(frameHeader(frame, 'seq') ?? '0');
    const payload = frame.payload ?? new Uint8Array();
    if (!Number.isInteger(sum) || sum < 1 || sum > MAX_EVENT_PARTS) return { kind: 'invalid', reason: `sum ${frameHeader(frame, 'sum')} is not 1..${MAX_EVENT_PARTS}` };
    if (!Number.isInteger(seq) || seq < 0 || seq >= sum) return { kind: 'invalid', reason: `seq ${frameHeader(frame, 'seq')} is not 0..${sum - 1}` };
    if (payload.byteLength > MAX_EVENT_BYTES) return { kind: 'invalid', reason: `part of ${payload.byteLength} bytes` };
    if (sum === 1) return { kind: 'complete', payload: Buffer.from(payload) };
    if (!messageId) return { kind: 'invalid', reason: 'a split event without message_id' };
    this.expire();
    let entry = this.pending.get(messageId);
    if (!entry) {
      if (this.pending.size >= MAX_PENDING_EVENTS) return { kind: 'invalid', reason: `more than ${MAX_PENDING_EVENTS} split events incomplete` };
      entry = { parts: new Array<Uint8Array | undefined>(sum).fill(undefined), bytes: 0, firstAt: this.now() };
      this.pending.set(messageId, entry);
    }
    if (entry.parts.length !== sum) {
      this.pending.delete(messageId);
      return { kind: 'invalid', reason: `sum ${sum} differs from the first part's ${entry.parts.length}` };
    }
    entry.bytes += payload.byteLength - (entry.parts[seq]?.byteLength ?? 0);
    if (entry.bytes > MAX_EVENT_BYTES) {
      this.pending.delete(messageId);
      return { kind: 'invalid', reason: `event larger than ${MAX_EVENT_BYTES} bytes` };
    }
    entry.parts[seq] = payload;
    const parts = entry.parts.filter((p): p is Uint8Array => p !== undefined);
    if (parts.length < sum) return { kind: 'partial' };
    this.pending.delete(messageId);
    return { kind: 'complete', payload: Buffer.concat(parts) };
  }

  /** Split events waiting for more parts. */
  get size(): number {
    return this.pending.size;
  }

  private expire() {
    const cutoff = this.now() - EVENT_PARTS_TTL_MS;
    for (const [id, entry] of this.pending) if (entry.firstAt < cutoff) this.pending.delete(id);
  }
}
