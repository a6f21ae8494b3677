/** "Did you mean" for the CLI: the closest of a few known words (verbs, flags) to a mistyped one. */
import { isToolEnvelopeError } from 'tool-envelope/core';

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), for short words.
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate closest to `word` (a prefix of it counts as close), or undefined when none is
 * close enough to be a likely typo (at most a third of the word's letters off).
 */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase().slice(0, 64);
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const score = c.startsWith(w) && w.replace(/^-+/, '').length >= 2 ? 0.5 : distance(w, c);
    if (score < bestScore) {
      best = c;
      bestScore = score;
    }
  }
  return bestScore <= Math.max(1, Math.floor(w.replace(/^-+/, '').length / 3)) ? best : undefined;
}

/**
 * An error's message, with a did-you-mean when it is a file's unknown key (an issue `unknown-key`
 * whose params name the key and the expected ones: config files, tokens files).
 */
export function withDidYouMean(err: unknown): string {
  const message = (err as Error).message;
  const issue = isToolEnvelopeError(err) ? err.issues.find((i) => i.code === 'unknown-key') : undefined;
  if (!issue) return message;
  const { key, expected } = issue.params as { key: string; expected: string[] };
  const near = suggest(key, expected);
  return near ? `${message} (did you mean '${near}'?)` : message;
}
