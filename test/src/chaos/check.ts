import type { ReceivedCallback } from '../fakes/callback-receiver.js';

/** A message the ingress accepted (202), in the order its session sent it. */
export interface AcceptedMessage {
  sessionId: string;
  replyTo: string;
  /** 0-based position in its session. */
  position: number;
}

export interface DeliveryReport {
  accepted: number;
  answered: number;
  /** Accepted messages without a final callback. */
  lost: string[];
  /** Replies with more than one final callback. */
  duplicatedFinals: string[];
  /** A callback whose (session, reply_to, sequence) repeats an earlier one with another body, or whose sequence went down within a reply. */
  sequenceViolations: string[];
  /** A part of a reply after its final part. */
  afterFinal: string[];
  /** A part of a session's message before the previous message's final part. */
  orderViolations: string[];
  /** Byte-identical repeats (absorbed by the receiver's idempotency key; counted, not failures). */
  resent: number;
  /** Streamed snapshots shorter than one shown before (a restarted attempt replaced the text). */
  rewinds: number;
}

function text(c: ReceivedCallback): string {
  return (c.json?.message ?? []).map((p: { text?: string }) => p.text ?? '').join('');
}

/**
 * What an HTTP-bot integrator would see, checked against the protocol's promises: every accepted
 * message ends with exactly one final part; within a reply, sequences rise and nothing follows the
 * final part; a session's replies do not interleave. Duplicates are judged by the key the protocol
 * documents, (session_id, reply_to, sequence): a byte-identical repeat is absorbed by it, a repeat
 * with another body is a violation.
 */
export function checkDeliveries(accepted: readonly AcceptedMessage[], received: readonly ReceivedCallback[]): DeliveryReport {
  const mine = new Set(accepted.map((a) => a.replyTo));
  const seen = new Map<string, string>();
  const byReply = new Map<string, ReceivedCallback[]>();
  let resent = 0;
  const sequenceViolations: string[] = [];
  for (const c of [...received].sort((a, b) => a.n - b.n)) {
    if (!c.json || !mine.has(c.json.reply_to)) continue;
    const key = `${c.json.session_id}|${c.json.reply_to}|${c.json.sequence}`;
    const body = c.rawBody.toString();
    const before = seen.get(key);
    if (before !== undefined) {
      if (before === body) resent++;
      else sequenceViolations.push(`${key}: the same key with another body`);
      continue;
    }
    seen.set(key, body);
    const list = byReply.get(c.json.reply_to) ?? [];
    list.push(c);
    byReply.set(c.json.reply_to, list);
  }
  const lost: string[] = [];
  const duplicatedFinals: string[] = [];
  const afterFinal: string[] = [];
  let rewinds = 0;
  for (const a of accepted) {
    const parts = byReply.get(a.replyTo) ?? [];
    const finals = parts.filter((c) => c.json.is_final === true);
    if (finals.length === 0) lost.push(a.replyTo);
    if (finals.length > 1) duplicatedFinals.push(`${a.replyTo}: ${finals.length} finals`);
    const firstFinal = parts.findIndex((c) => c.json.is_final === true);
    if (firstFinal >= 0 && firstFinal < parts.length - 1) afterFinal.push(`${a.replyTo}: ${parts.length - 1 - firstFinal} part(s) after the final`);
    for (let i = 1; i < parts.length; i++) {
      if (parts[i].json.sequence <= parts[i - 1].json.sequence) sequenceViolations.push(`${a.replyTo}: sequence ${parts[i - 1].json.sequence} then ${parts[i].json.sequence}`);
      if (parts[i].json.stream && parts[i - 1].json.stream && text(parts[i]).length < text(parts[i - 1]).length) rewinds++;
    }
  }
  const orderViolations: string[] = [];
  const sessions = new Map<string, AcceptedMessage[]>();
  for (const a of accepted) sessions.set(a.sessionId, [...(sessions.get(a.sessionId) ?? []), a]);
  for (const [session, messages] of sessions) {
    const sorted = [...messages].sort((x, y) => x.position - y.position);
    for (let i = 1; i < sorted.length; i++) {
      const prevFinal = (byReply.get(sorted[i - 1].replyTo) ?? []).find((c) => c.json.is_final === true);
      const firstOfNext = (byReply.get(sorted[i].replyTo) ?? [])[0];
      if (prevFinal && firstOfNext && firstOfNext.n < prevFinal.n) orderViolations.push(`${session}: message ${i} started before message ${i - 1} ended`);
    }
  }
  return {
    accepted: accepted.length,
    answered: accepted.length - lost.length,
    lost,
    duplicatedFinals,
    sequenceViolations,
    afterFinal,
    orderViolations,
    resent,
    rewinds,
  };
}

/** The violations that fail a run (lost, duplicated, out of order); resends and rewinds are reported only. */
export function violations(r: DeliveryReport): string[] {
  return [...r.lost.map((q) => `lost ${q}`), ...r.duplicatedFinals, ...r.sequenceViolations, ...r.afterFinal, ...r.orderViolations];
}
