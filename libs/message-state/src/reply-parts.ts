import type { ReplyRoute } from '@conveyor/contracts';
import type { OutboundReply } from '@conveyor/platform-kit';

/** A part as it waits in Redis. */
export interface QueuedPart {
  route: ReplyRoute;
  reply: OutboundReply;
  queryId: string;
  /** `${attempt}:${seq}:${sub}`: the part's identity, stable across redeliveries. */
  key: string;
  /** Trace context of the event that produced it (W3C carrier). */
  trace?: Record<string, string>;
}

export type BatchEntry =
  | { t: 'part'; part: QueuedPart }
  | {
    t: 'seal'; queryId: string; terminal: boolean; route: ReplyRoute; attempt?: number; seq?: number;
    /** Stored with the query's session turn ended in the same step (`ReplyQueue.endsTurnWithLastEvent`): taking it ends nothing more. */
    turnEnded?: boolean;
  };

