/**
 * Milliseconds on a monotonic clock, like `performance.now()` but without its cost: the first use
 * of the `performance` global loads perf_hooks, about 2 ms of every CLI start-up.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
