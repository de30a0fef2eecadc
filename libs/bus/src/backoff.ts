/** Redelivery delay after the n-th failed delivery (n starts at 1). */
export type Backoff = (deliveryCount: number) => number;

/** 500 ms, 1 s, 2 s, 4 s, ... capped at 30 s. */
export function exponentialBackoff(baseMs = 500, capMs = 30_000): Backoff {
  return (deliveryCount) => Math.min(capMs, baseMs * 2 ** Math.max(0, deliveryCount - 1));
}

export const defaultBackoff: Backoff = exponentialBackoff();
