/** Reading a console request: its cookies, its query, and a bounded urlencoded form body. */
import type { IncomingMessage } from 'node:http';

/** The cookies of a request (the first value of each name). */
export function cookiesOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const part of String(req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

/** The query of a request's URL. */
export function queryOf(req: IncomingMessage): URLSearchParams {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}

/** A form body too large, or not a form: the request is refused. */
export class FormError extends Error {}

/** The urlencoded form of a POST, at most `maxBytes`. */
export async function readForm(req: IncomingMessage, maxBytes = 65_536): Promise<URLSearchParams> {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    throw new FormError('expected an application/x-www-form-urlencoded form');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.resume();
      throw new FormError(`the form is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
