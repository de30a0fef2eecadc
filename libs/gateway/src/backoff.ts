/** Delay before the n-th reconnection attempt (n starts at 1). */
export type ReconnectBackoff = (attempt: number) => number;

/**
 * 1 s, 2 s, 4 s, ... capped (30 s by default), with up to a quarter of jitter so replicas and bots
 * that lost their platform together do not all knock at the same moment.
 */
export function reconnectBackoff(baseMs = 1_000, capMs = 30_000, random: () => number = Math.random): ReconnectBackoff {
  return (attempt) => {
    const exact = Math.min(capMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
    return Math.round(exact * (0.75 + random() * 0.25));
  };
}
