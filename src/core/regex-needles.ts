/**
 * Literal prefilters for regular expressions: the strings at least one of which must occur in
 * a text for a pattern to match it. One pass of a `NeedleScanner` finds the needles of every
 * rule at once, about the cost of one regular-expression scan, so a rule set tries a pattern
 * only on the texts that contain one of its needles. The analysis is conservative: whenever it is unsure it answers
 * `null` (no prefilter: always try the pattern), never a needle the pattern could do without.
 */

/** Shorter needles match too often to save anything. */
const MIN_NEEDLE = 3;

interface Cursor {
  readonly src: string;
  i: number;
}

/** Skips a character class `[...]` starting at `c.i` (on the `[`). */
function skipClass(c: Cursor): void {
  c.i++;
  if (c.src[c.i] === '^') c.i++;
  if (c.src[c.i] === ']') c.i++;
  while (c.i < c.src.length && c.src[c.i] !== ']') c.i += c.src[c.i] === '\\' ? 2 : 1;
  c.i++;
}

/** The quantifier at `c.i`, consumed: `min` is its lower bound (1 when there is none). */
function quantifier(c: Cursor): { min: number } {
  const ch = c.src[c.i];
  let min = 1;
  if (ch === '?' || ch === '*') {
    min = 0;
    c.i++;
  } else if (ch === '+') c.i++;
  else if (ch === '{') {
    const m = /^\{(\d+)(?:,\d*)?\}/.exec(c.src.slice(c.i));
    if (!m) return { min: 1 };
    min = Number(m[1]);
    c.i += m[0].length;
  } else return { min: 1 };
  if (c.src[c.i] === '?') c.i++;
  return { min };
}

function hasQuantifier(c: Cursor): boolean {
  const ch = c.src[c.i];
  return ch === '?' || ch === '*' || ch === '+' || (ch === '{' && /^\{\d+(?:,\d*)?\}/.test(c.src.slice(c.i)));
}

/** Best needle set of the alternation from `c.i` up to the closing `)` (or the end); null when unsure. */
function alternation(c: Cursor, fold: boolean): string[] | null {
  const out: string[] = [];
  let ok = true;
  for (;;) {
    const alt = sequence(c, fold);
    if (alt === null) ok = false;
    else out.push(...alt);
    if (c.src[c.i] === '|') {
      c.i++;
      continue;
    }
    break;
  }
  return ok ? [...new Set(out)] : null;
}

/** Best needle set of one alternative; stops at `|`, `)` or the end. */
function sequence(c: Cursor, fold: boolean): string[] | null {
  const candidates: string[][] = [];
  let run = '';
  const flush = (): void => {
    if (run.length >= MIN_NEEDLE) candidates.push([run]);
    run = '';
  };
  while (c.i < c.src.length) {
    const ch = c.src[c.i]!;
    if (ch === '|' || ch === ')') break;
    if (ch === '(') {
      flush();
      c.i++;
      let zeroWidth = false;
      if (c.src.startsWith('?:', c.i)) c.i += 2;
      else if (c.src.startsWith('?=', c.i) || c.src.startsWith('?!', c.i)) (zeroWidth = true), (c.i += 2);
      else if (c.src.startsWith('?<=', c.i) || c.src.startsWith('?<!', c.i)) (zeroWidth = true), (c.i += 3);
      else if (c.src.startsWith('?<', c.i)) c.i = c.src.indexOf('>', c.i) + 1;
      else if (c.src[c.i] === '?') return null;
      const inner = alternation(c, fold);
      if (c.src[c.i] !== ')') return null;
      c.i++;
      const q = quantifier(c);
      if (!zeroWidth && q.min > 0 && inner?.every((n) => n.length >= MIN_NEEDLE)) candidates.push(inner);
      continue;
    }
    if (ch === '[') {
      flush();
      skipClass(c);
      quantifier(c);
      continue;
    }
    if (ch === '.' || ch === '^' || ch === '$') {
      flush();
      c.i++;
      quantifier(c);
      continue;
    }
    let literal: string | undefined;
    if (ch === '\\') {
      const e = c.src[c.i + 1];
      if (e === undefined) return null;
      if (/[A-Za-z0-9]/.test(e)) {
        // Classes (\d \s \w ...), assertions (\b), control and code-point escapes, back references: not literal text.
        flush();
        if (e === 'x') c.i += 4;
        else if (e === 'u') c.i += c.src[c.i + 2] === '{' ? c.src.indexOf('}', c.i) + 1 - c.i : 6;
        else if (e === 'k') c.i = c.src.indexOf('>', c.i) + 1;
        else if (e === 'p' || e === 'P') c.i = c.src.indexOf('}', c.i) + 1;
        else if (e === 'c') c.i += 3;
        else c.i += 2;
        if (c.i <= 0) return null;
        quantifier(c);
        continue;
      }
      literal = e;
      c.i += 2;
    } else {
      literal = ch;
      c.i++;
    }
    if (literal.charCodeAt(0) > 0x7e || literal.charCodeAt(0) < 0x20) {
      // Case folding beyond ASCII differs between a regular expression and toLowerCase: no needle across it.
      flush();
      quantifier(c);
      continue;
    }
    if (hasQuantifier(c)) {
      const q = quantifier(c);
      if (q.min > 0) run += fold ? literal.toLowerCase() : literal;
      flush();
      continue;
    }
    run += fold ? literal.toLowerCase() : literal;
  }
  flush();
  if (candidates.length === 0) return null;
  // The best candidate is the one least likely to occur by chance: its weakest needle counts,
  // digits and punctuation are rarer in prose than letters, and every extra needle is another chance.
  let best = candidates[0]!;
  const score = (s: string[]): number => Math.min(...s.map(rarity)) - (s.length - 1) / 2;
  for (const cand of candidates) if (score(cand) > score(best)) best = cand;
  return best;
}

/** How unlikely a needle is to occur by chance: its length, plus one for each digit or punctuation mark. */
function rarity(needle: string): number {
  let r = needle.length;
  for (let i = 0; i < needle.length; i++) if (!/[a-z ]/i.test(needle[i]!)) r++;
  return r;
}

/**
 * The needles of a pattern (lower-cased when `fold`, for a case-insensitive pattern matched
 * against a lower-cased text); `null` when the pattern can match without any literal of at
 * least three characters, or when the analysis is unsure.
 */
export function regexNeedles(pattern: string, fold: boolean): string[] | null {
  const c: Cursor = { src: pattern, i: 0 };
  const needles = alternation(c, fold);
  if (c.i !== pattern.length) return null;
  return needles;
}
