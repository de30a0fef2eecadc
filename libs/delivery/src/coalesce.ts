import type { MessageChain } from '@conveyor/contracts';
import type { BatchEntry, QueuedPart } from '@conveyor/message-state';

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
 * Whether `next` shows everything `prev` showed and maybe more: the same components, the last one of
 * `prev` allowed to have grown (a Plain whose text `next` continues). A snapshot of the same round
 * does; the tool-call notice or the next round's text (which starts from empty) does not.
 */
export function extendsChain(next: MessageChain, prev: MessageChain): boolean {
  if (next.length < prev.length) return false;
  return prev.every((c, i) => {
    const n = next[i];
    if (i === prev.length - 1 && c.type === 'Plain' && n.type === 'Plain') return n.text.startsWith(c.text);
    return JSON.stringify(n) === JSON.stringify(c);
  });
}

/**
 * Which parts of a ready batch are worth sending. A streamed, non-final part carries the cumulative
 * text of its model round, so when the reply's next streamed part in the batch extends that text
 * (a newer snapshot of the same round) the older one is skipped: a slow platform gets the newest
 * snapshot instead of a backlog. A part whose text the next one does not continue (the text before a
 * tool round, the `Call ...` notice, a snapshot whose text changed) is sent: a platform that shows
 * each part would otherwise never show it. Whole replies and final parts are never skipped; order is kept.
 */
export function planBatch(entries: readonly BatchEntry[], startOrdinal: Record<string, number>): Plan {
  const ordinals = { ...startOrdinal };
  const send: Planned[] = [];
  let coalesced = 0;
  const parts = entries.filter((e): e is Extract<BatchEntry, { t: 'part' }> => e.t === 'part').map((e) => e.part);
  // The reply's next streamed part after each part, found in one pass from the end.
  const nextSnapshot: (QueuedPart | undefined)[] = new Array(parts.length);
  const following = new Map<string, QueuedPart>();
  for (let i = parts.length - 1; i >= 0; i--) {
    nextSnapshot[i] = following.get(parts[i].queryId);
    if (parts[i].reply.stream) following.set(parts[i].queryId, parts[i]);
  }
  parts.forEach((part, i) => {
    const isSnapshot = part.reply.stream;
    if (isSnapshot) ordinals[part.queryId] = (ordinals[part.queryId] ?? 0) + 1;
    const next = nextSnapshot[i];
    if (isSnapshot && !part.reply.isFinal && next && extendsChain(next.reply.message, part.reply.message)) {
      coalesced++;
      return;
    }
    send.push({ part, chunkOrdinal: ordinals[part.queryId] ?? 0 });
  });
  return { send, coalesced };
}
