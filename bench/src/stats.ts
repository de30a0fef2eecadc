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
