// The sign-in limit over real HTTP against real consoles on real stores: guesses sent at the same
// moment from one address, to one console or to two over one SQLite file or one PostgreSQL store,
// are counted exactly (at most the limit are checked, the rest refused), and a good sign-in never
// counts as a failure.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { isAuthFailure, tokenAuthenticator, tokenDigest } from '../mcp/serve/auth.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, freshSchemas } from '../store/test-support/pg.js';
import type { Store } from '../store/types.js';
import type { ConsoleOptions } from './console.js';
import { Agent, serveConsole, type ServedConsole } from './test-support/http-client.js';

const key = operatorKeyFromSecret('cd'.repeat(32));
const dir = mkdtempSync(join(tmpdir(), 'te-sign-in-limit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const auth = tokenAuthenticator({ tokens: [{ sha256: tokenDigest('approver-acme'), principal: 'user:rita', tenant: 'acme', roles: ['approver'] }] });
// Checking a token takes a moment, as an OAuth verifier's key fetch or a slow store would: the
// guesses are all in flight at once (on SQLite, whose calls are synchronous, the race needs it).
const verifyToken: ConsoleOptions['verifyToken'] = async (t) => {
  await delay(20);
  const who = await auth.authenticate(`Bearer ${t}`);
  return isAuthFailure(who) ? undefined : who;
};

/** Consoles over `stores` (one each, as replicas), closed with their stores after `fn`. */
async function withConsoles(stores: Store[], fn: (consoles: ServedConsole[]) => Promise<void>, options: Partial<ConsoleOptions> = {}): Promise<void> {
  const consoles = await Promise.all(stores.map((store) => serveConsole({ store, verifyToken, operatorKey: async () => key, ...options })));
  try {
    await fn(consoles);
  } finally {
    for (const c of consoles) await c.close();
    for (const s of stores) await s.close();
  }
}

/**
 * 20 wrong tokens posted at once from 127.0.0.1, spread over the consoles, each form fetched first
 * (so the posts are all that is in flight): exactly the limit's 5 are checked (401), the rest refused (429).
 */
async function expectGuessesAtOnceCounted(consoles: ServedConsole[]): Promise<void> {
  const agents = Array.from({ length: 20 }, (_, i) => new Agent(consoles[i % consoles.length]!.url));
  const pres = await Promise.all(agents.map(async (a) => /name="pre" value="([^"]+)"/.exec((await a.request('/sign-in')).body)![1]!));
  const answers = await Promise.all(agents.map((a, i) => a.request('/sign-in', { form: { pre: pres[i]!, token: `guess-${i}` } })));
  const statuses = answers.map((a) => a.status);
  expect(statuses.filter((s) => s === 401)).toHaveLength(5);
  expect(statuses.filter((s) => s === 429)).toHaveLength(15);
}

describe('the sign-in limit over SQLite', () => {
  let n = 0;
  const open = (file = join(dir, `s${++n}.db`)) => openSqliteStore({ path: file, chainKey: false, auditWorker: false });

  it('20 wrong tokens at once to one console: 5 are checked, 15 refused', async () => {
    await withConsoles([await open()], expectGuessesAtOnceCounted);
  });

  it('20 wrong tokens at once to two consoles over one file: 5 are checked between them, 15 refused', async () => {
    const file = join(dir, 'shared.db');
    await withConsoles([await open(file), await open(file)], expectGuessesAtOnceCounted);
  });

  it('the right token after 4 failures signs in, and the count is still 4 (a success is no failure)', async () => {
    const store = await open();
    await withConsoles([store], async ([c]) => {
      for (let i = 0; i < 4; i++) expect((await new Agent(c!.url).signIn(`guess-${i}`)).status).toBe(401);
      expect((await new Agent(c!.url).signIn('approver-acme')).status).toBe(303);
      expect(await store.consoleSignInFailures.count('127.0.0.1', Date.now())).toBe(4);
      // Still under the limit: one more failure is checked, then the fifth has used it up.
      expect((await new Agent(c!.url).signIn('approver-acme')).status).toBe(303);
      expect((await new Agent(c!.url).signIn('guess-4')).status).toBe(401);
      expect((await new Agent(c!.url).signIn('approver-acme')).status).toBe(429);
    });
  });
});

/** Signs in on a fresh agent of `c` with `token`, the request carrying `X-Forwarded-For: forwardedFor`. */
async function signInAs(c: ServedConsole, token: string, forwardedFor: string): Promise<number> {
  const a = new Agent(c.url);
  const pre = /name="pre" value="([^"]+)"/.exec((await a.request('/sign-in')).body)![1]!;
  return (await a.request('/sign-in', { form: { pre, token }, headers: { 'x-forwarded-for': forwardedFor } })).status;
}

describe('who a sign-in is counted as', () => {
  const open = (name: string) => openSqliteStore({ path: join(dir, name), chainKey: false, auditWorker: false });

  it('behind a trusted proxy: the client of X-Forwarded-For, IPv6 per /64 (rotating addresses in it does not help; another /64 is not locked out)', async () => {
    const store = await open('proxied.db');
    await withConsoles(
      [store],
      async ([c]) => {
        for (let i = 1; i <= 5; i++) expect(await signInAs(c!, `guess-${i}`, `203.0.113.7, 2001:db8:0:1::${i}`)).toBe(401);
        expect(await signInAs(c!, 'approver-acme', '2001:db8:0:1:ffff::1')).toBe(429);
        expect(await signInAs(c!, 'approver-acme', '2001:db8:0:2::1')).toBe(303);
        expect(await signInAs(c!, 'approver-acme', '::ffff:198.51.100.9')).toBe(303);
        expect(await store.consoleSignInFailures.count('2001:db8:0:1::/64', Date.now())).toBe(5);
        expect(await store.consoleSignInFailures.count('127.0.0.1', Date.now())).toBe(0);
      },
      { trustProxy: ['127.0.0.1/32'] },
    );
  });

  it('without trusted proxies X-Forwarded-For is ignored: a client cannot name another address', async () => {
    const store = await open('direct.db');
    await withConsoles([store], async ([c]) => {
      for (let i = 1; i <= 5; i++) expect(await signInAs(c!, `guess-${i}`, `203.0.113.${i}`)).toBe(401);
      expect(await signInAs(c!, 'approver-acme', '203.0.113.99')).toBe(429);
      expect(await store.consoleSignInFailures.count('127.0.0.1', Date.now())).toBe(5);
      expect(await store.consoleSignInFailures.count('203.0.113.1', Date.now())).toBe(0);
    });
  });

  it('a trusted proxy range that is not one is refused when the console is made', async () => {
    const store = await open('bad-range.db');
    try {
      await expect(serveConsole({ store, verifyToken, trustProxy: ['nginx'] })).rejects.toMatchObject({ code: 'invalid-option' });
    } finally {
      await store.close();
    }
  });
});

describePg('the sign-in limit over PostgreSQL', (url) => {
  const schema = freshSchemas(url);

  it('20 wrong tokens at once to two consoles (replicas) over one store: 5 are checked between them, 15 refused', async () => {
    const s = schema();
    const open = () => openPostgresStore({ connectionString: url, schema: s, chainKey: false });
    await withConsoles([await open(), await open()], expectGuessesAtOnceCounted);
  });
});
