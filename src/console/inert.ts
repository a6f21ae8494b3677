/**
 * Stored strings made inert for HTML: every string shown by the console comes from the network or
 * the store (hostile), so it is escaped for HTML, its terminal escapes, other control characters and
 * bidirectional overrides are shown as visible `\u{..}` marks instead of acting, and it is cut at a
 * bound so a 1 MB argument cannot swell a page.
 */

// C0 controls but tab and newline, DEL, C1 controls (ESC starts ANSI sequences), and the bidi
// embeddings, overrides, isolates and marks that can reorder what a reader sees (Trojan Source).
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;
// The same class, tested once: most stored strings hold none of it and are returned as they are.
const HAS_UNSAFE = new RegExp(UNSAFE.source);
const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` safe to place in HTML text or a quoted attribute, cut to `max` UTF-16 units (with a note of what was cut). */
export function inert(text: unknown, max = 4_096): string {
  return marked(text, max).replace(/[&<>"']/g, (c) => HTML[c]!);
}

/**
 * `text` with its control characters and bidi overrides shown as marks and cut to `max`, not
 * escaped: for a page script that places it with `textContent` (the live views' JSON).
 */
export function marked(text: unknown, max = 4_096): string {
  let s = typeof text === 'string' ? text : String(text);
  if (s.length <= max && !HAS_UNSAFE.test(s)) return s;
  let cut = '';
  if (s.length > max) {
    cut = ` … (${s.length - max} more characters not shown)`;
    s = s.slice(0, max);
  }
  return s.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`) + cut;
}

/** A JSON value shown as indented text, inert and bounded. */
export function inertJson(value: unknown, max = 65_536): string {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? 'null';
  } catch {
    text = '(not JSON)';
  }
  return inert(text, max);
}
