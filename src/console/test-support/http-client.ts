/**
 * A console served on a real loopback listener over a real store, and a small cookie-keeping HTTP
 * client that signs in as a browser form would. Test support only.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ConsoleOptions, createConsole } from '../console.js';

/** A console listening on 127.0.0.1. */
export interface ServedConsole {
  url: string;
  close(): Promise<void>;
}

/** Serves `createConsole(options)` on a free loopback port. */
export async function serveConsole(options: ConsoleOptions): Promise<ServedConsole> {
  const handler = createConsole(options);
  const server: Server = createServer((req, res) => void handler.handle(req, res, (req.url ?? '/').split('?')[0]!));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/console`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** An answer: status, headers, body. */
export interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** A client that keeps the cookies it is given, as a browser does (SameSite aside). */
export class Agent {
  readonly cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async request(path: string, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.cookies.size) headers.cookie = this.cookieHeader();
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(`${this.base}${path}`, { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /Max-Age=0/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, headers: res.headers, body: await res.text() };
  }

  /** The CSRF token of the last page that has a form. */
  static csrfOf(html: string): string | undefined {
    return /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  }

  /** Signs in with a token (or none, for an operator console); returns the sign-in POST's answer. */
  async signIn(token?: string): Promise<Answer> {
    const form = await this.request('/sign-in');
    const pre = /name="pre" value="([^"]+)"/.exec(form.body)![1]!;
    return this.request('/sign-in', { form: { pre, ...(token !== undefined && { token }) } });
  }
}
