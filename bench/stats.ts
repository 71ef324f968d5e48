/** Order statistics over a sample of durations (ms). */
export interface Summary {
  n: number;
  median_ms: number;
  p90_ms: number;
  min_ms: number;
  max_ms: number;
}

/** The value at quantile q (0-1) by linear interpolation between the closest ranks. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new Error("quantile of an empty sample");
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const a = sorted[lower]!;
  const b = sorted[upper]!;
  return a + (b - a) * (position - lower);
}

/** The middle value of an unsorted sample (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    median_ms: round(quantile(sorted, 0.5)),
    p90_ms: round(quantile(sorted, 0.9)),
    min_ms: round(sorted[0]!),
    max_ms: round(sorted[sorted.length - 1]!),
  };
}

export function round(value: number, digits = 1): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
