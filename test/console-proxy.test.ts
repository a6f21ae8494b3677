// The console behind a real nginx running the config of docs/deploy.md (its /console location),
// three consoles (`tool-envelope console --trust-proxy 127.0.0.1/32`, in-process) over one SQLite
// store as its replicas. Clients reach nginx from other loopback addresses than nginx's own
// (127.0.0.3, 127.0.0.4: outside the trusted range, as real clients are), so nginx appends an
// untrusted address: failed sign-ins count per client, a spoofed X-Forwarded-For changes nothing,
// and one client's failures do not lock another out.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as consoleVerb from '../src/cli/console.js';
import { runVerb } from '../src/cli/test-support/run-verb.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { describeNeeding } from './prereqs.js';
import { consoleSignInFrom, freePort, type Nginx, nginxSiteFromDoc, startNginx } from './scale-out-support.js';

describeNeeding('nginx', 'the console behind nginx, --trust-proxy', (nginxBin) => {
  const dir = mkdtempSync(join(tmpdir(), 'te-console-proxy-'));
  const storeFile = join(dir, 'console.db');
  const token = randomBytes(24).toString('base64url');
  const stop = new AbortController();
  const consoles: { port: number; done: Promise<unknown> }[] = [];
  let nginx: Nginx | undefined;

  beforeAll(async () => {
    const tokensFile = join(dir, 'tokens.yaml');
    writeFileSync(tokensFile, `tokens:\n  - sha256: ${createHash('sha256').update(token).digest('hex')}\n    principal: user:rita\n    roles: [approver]\n`);
    // Migrated once, before three consoles open it at the same moment.
    await (await openSqliteStore({ path: storeFile, chainKey: false, auditWorker: false })).close();
    for (let i = 0; i < 3; i++) {
      let listening: (port: number) => void;
      const port = new Promise<number>((r) => (listening = r));
      const args = ['--store', storeFile, '--listen', '127.0.0.1:0', '--tokens', tokensFile, '--trust-proxy', '127.0.0.1/32'];
      const done = runVerb(consoleVerb, args, {
        signal: stop.signal,
        onStdout: (c) => {
          const m = /Console: http:\/\/127\.0\.0\.1:(\d+)\//.exec(c);
          if (m) listening(Number(m[1]));
        },
      });
      consoles.push({ port: await Promise.race([port, done.then((r) => Promise.reject(new Error(`console exited: ${JSON.stringify(r)}`)))]), done });
    }
    for (let attempt = 1; !nginx; attempt++) {
      const port = await freePort();
      nginx = await startNginx(
        nginxBin,
        join(dir, `nginx-${attempt}`),
        nginxSiteFromDoc(
          consoles.map((c) => c.port),
          port,
        ),
        port,
      ).catch((err: Error) => {
        if (attempt === 3 || !/Address already in use/.test(err.message)) throw err;
        return undefined;
      });
    }
  }, 60_000);

  afterAll(async () => {
    await nginx?.stop();
    stop.abort();
    await Promise.all(consoles.map((c) => c.done));
    rmSync(dir, { recursive: true, force: true });
  });

  const signIn = (from: string, tok: string, claimed: string, port = nginx!.port) => consoleSignInFrom(from, port, tok, claimed);

  it('counts failed sign-ins per client nginx names, not per nginx: a spoofed X-Forwarded-For changes nothing, another client is not locked out', async () => {
    // Five failures from 127.0.0.3, spread over the three consoles, each claiming another address.
    for (let i = 1; i <= 5; i++) expect(await signIn('127.0.0.3', `guess-${i}`, `203.0.113.${i}`)).toBe(401);
    expect(await signIn('127.0.0.3', token, '203.0.113.99')).toBe(429);
    // Another client behind the same nginx signs in.
    expect(await signIn('127.0.0.4', token, '127.0.0.3')).toBe(303);
    // Straight to a console, not through a trusted proxy: the header is not read at all.
    expect(await signIn('127.0.0.3', token, '198.51.100.1', consoles[0]!.port)).toBe(429);
    const store = await openSqliteStore({ path: storeFile, chainKey: false, auditWorker: false });
    try {
      const t = store.consoleSignInFailures;
      expect(await t.count('127.0.0.3', Date.now())).toBe(5);
      for (const nobody of ['127.0.0.1', '127.0.0.4', '203.0.113.1', '198.51.100.1']) expect(await t.count(nobody, Date.now())).toBe(0);
    } finally {
      await store.close();
    }
  });
});
