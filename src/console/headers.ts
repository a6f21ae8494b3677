/**
 * The headers of every console answer: a strict Content-Security-Policy (scripts and styles only
 * from the console's own files, no inline script, no framing), no sniffing, no referrer to other sites, no caching
 * of pages that show the log.
 */
import type { ServerResponse } from 'node:http';

/** The console's Content-Security-Policy. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const COMMON = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: under no-referrer a browser's form POST says 'Origin: null', and the origin check needs it.
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
} as const;

/** Sends a whole answer with the console's headers. */
export function send(res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...COMMON, 'cache-control': 'no-store', 'content-type': type, ...extra }).end(body);
}

/** Starts a streamed answer with the console's headers (its body written by the caller). */
export function head(res: ServerResponse, status: number, type: string, extra: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...COMMON, 'cache-control': 'no-store', 'content-type': type, ...extra });
}

/** A 303 redirect (after a POST, so a reload does not post again). */
export function redirect(res: ServerResponse, location: string, extra: Record<string, string | string[]> = {}): void {
  res.writeHead(303, { ...COMMON, 'cache-control': 'no-store', location, ...extra }).end();
}
