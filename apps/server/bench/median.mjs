// The median the benches report: of an even count, the mean of the two middle values.

/** The median of `values` (numbers), which it leaves as they are. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
