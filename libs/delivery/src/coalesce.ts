import type { BatchEntry, QueuedPart } from './types.js';

export interface Planned {
  part: QueuedPart;
  /** Streamed snapshot ordinal after this part (coalesced parts count too). */
  chunkOrdinal: number;
}

export interface Plan {
  send: Planned[];
  coalesced: number;
}

/**
 * Which parts of a ready batch are worth sending. A streamed, non-final part carries the cumulative
 * text of its reply, so when a newer streamed part of the same reply is already waiting the older one
 * is skipped: a slow platform gets the newest snapshot instead of a backlog. Whole replies and final
 * parts are never skipped; order is kept.
 */
export function planBatch(entries: readonly BatchEntry[], startOrdinal: Record<string, number>): Plan {
  const ordinals = { ...startOrdinal };
  const send: Planned[] = [];
  let coalesced = 0;
  const parts = entries.filter((e): e is Extract<BatchEntry, { t: 'part' }> => e.t === 'part').map((e) => e.part);
  parts.forEach((part, i) => {
    const isSnapshot = part.reply.stream;
    if (isSnapshot) ordinals[part.queryId] = (ordinals[part.queryId] ?? 0) + 1;
    const superseded =
      isSnapshot && !part.reply.isFinal &&
      parts.slice(i + 1).some((later) => later.queryId === part.queryId && later.reply.stream);
    if (superseded) {
      coalesced++;
      return;
    }
    send.push({ part, chunkOrdinal: ordinals[part.queryId] ?? 0 });
  });
  return { send, coalesced };
}
