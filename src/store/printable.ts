/**
 * Stored text made safe to print on a terminal: tool names, ids, principals and error text come
 * from upstream servers and callers (hostile), so their control characters (ESC starts terminal
 * escapes; newlines break a layout) and the bidi overrides that reorder what a reader sees must not
 * act when a CLI prints them. In the store layer so that every layer that prints such text (the
 * CLI, reports, the gateway's upstream messages) shares one definition.
 */

// C0 controls, DEL, C1 controls, and the bidi marks, embeddings, overrides and isolates.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// What JSON.stringify leaves as it is (it escapes C0 controls only).
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with each control character and bidi override replaced by `?`. */
export function printable(text: string): string {
  return text.replace(UNSAFE, '?');
}

/**
 * `json` (the output of `JSON.stringify`) with the characters it leaves raw (DEL, C1 controls,
 * bidi overrides) written as `\uXXXX` escapes: still the same JSON, inert on a terminal.
 */
export function printableJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
