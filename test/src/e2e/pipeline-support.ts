import type { ReceivedCallback } from '../fakes/index.js';
import type { TestSystem } from '../harness/system.js';

/** Posts a message and returns its accepted message id (the `reply_to` of its callbacks). */
export async function send(sys: TestSystem, body: Record<string, unknown>): Promise<string> {
  const res = await sys.post(body);
  if (res.status !== 202) throw new Error(`ingress answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: { accepted_message_id: string } }).data.accepted_message_id;
}

export function text(sessionId: string, t: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { session_id: sessionId, message: [{ type: 'Plain', text: t }], ...extra };
}

/** The reply's final callback (a whole reply, or the last streamed chunk). */
export async function finalReply(sys: TestSystem, replyTo: string, timeoutMs = 30_000): Promise<ReceivedCallback> {
  const all = await sys.callbacks.waitFor((r) => r.some((c) => c.json?.reply_to === replyTo && c.json?.is_final === true), timeoutMs);
  return all.find((c) => c.json?.reply_to === replyTo && c.json?.is_final === true)!;
}

export function callbacksFor(sys: TestSystem, replyTo: string): ReceivedCallback[] {
  return sys.callbacks.received.filter((c) => c.json?.reply_to === replyTo);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
