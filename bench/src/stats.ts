/**
 * Messages sent before anything is measured, by the product's bench and the floor's alike. The
 * product's services run far more code than the floor's hops, and V8 optimises a function only once
 * it is hot: after 200 messages the product was still compiling (a tenth of each service's CPU in
 * the compiler threads) and its figures were those of a cold process, not of a service that has run
 * for a while. From about 1000 on they no longer move (3000 gave the same figures).
 */
export const WARMUP_MESSAGES = 1000;

/** Percentile of a sample (nearest rank); the sample is sorted in place. */
export function percentile(sample: number[], p: number): number {
  if (sample.length === 0) return NaN;
  sample.sort((a, b) => a - b);
  const rank = Math.min(sample.length - 1, Math.max(0, Math.ceil((p / 100) * sample.length) - 1));
  return sample[rank];
}

export function fmtMs(ms: number): string {
  return `${ms.toFixed(2)} ms`;
}
