/** Edit distance (insertions, deletions, substitutions), for "did you mean" hints. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** Up to `max` candidates close to `input` (a typo, or a name that starts the same), closest first. */
export function closestMatches(input: string, candidates: Iterable<string>, max = 3): string[] {
  const needle = input.toLowerCase();
  const limit = Math.max(1, Math.floor(needle.length / 3));
  const scored: Array<[string, number]> = [];
  for (const candidate of candidates) {
    const score = candidate.startsWith(needle) && needle.length >= 3 ? 0 : distance(needle, candidate);
    if (score <= limit) scored.push([candidate, score]);
  }
  return scored
    .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, max)
    .map(([candidate]) => candidate);
}
