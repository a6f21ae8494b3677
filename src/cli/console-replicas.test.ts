// Console sessions across replicas: two real gateway processes ('gateway --http 0 --console') over
// one PostgreSQL store (a database of their own on the test server), as behind a load balancer
// without sticky sessions. A session signed in on replica A is good on replica B (its CSRF token
// too); signed out on B, it is refused on A. The store holds the session id's SHA-256, never the id.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent } from '../console/test-support/http-client.js';
import { describePg } from '../store/test-support/pg.js';
import { type ConsoleGateway, startConsoleGateway, writeTokensFile } from './test-support/console-gateway.js';

describePg('console sessions shared by two gateways on one PostgreSQL store', (url) => {
  const dir = mkdtempSync(join(tmpdir(), 'te-console-replicas-'));
  const database = `te_sessions_${randomBytes(5).toString('hex')}`;
  const store = url.replace(/\/[^/]*$/, `/${database}`);
  let a: ConsoleGateway;
  let b: ConsoleGateway;
  const sql = async (text: string, on = url): Promise<pg.QueryResult> => {
    const c = new pg.Client({ connectionString: on });
    await c.connect();
    try {
      return await c.query(text);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    await sql(`CREATE DATABASE ${database}`);
    const tokensFile = join(dir, 'tokens.yaml');
    writeTokensFile(tokensFile, { 'approver-acme': { principal: 'user:rita', tenant: 'acme', roles: ['approver'] } });
    // One after the other: both would run the migrations, which serialise anyway.
    a = await startConsoleGateway({ store, tokensFile, home: dir, env: { COUNT_FILE: join(dir, 'ran-a.ndjson') } });
    b = await startConsoleGateway({ store, tokensFile, home: dir, env: { COUNT_FILE: join(dir, 'ran-b.ndjson') } });
  }, 120_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await sql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    rmSync(dir, { recursive: true, force: true });
  });

  it('signed in on A, the cookie works on B; signed out on B, A refuses it', async () => {
    const onA = new Agent(a.consoleUrl.replace(/\/$/, ''));
    expect((await onA.signIn('approver-acme')).status).toBe(303);
    const id = onA.cookies.get('te_console')!;
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await onA.request('/inbox')).status).toBe(200);

    // The load balancer sends the same browser to B.
    const onB = new Agent(b.consoleUrl.replace(/\/$/, ''));
    onB.cookies.set('te_console', id);
    const inbox = await onB.request('/inbox');
    expect(inbox.status).toBe(200);
    expect(inbox.body).toContain('user:rita');

    // Only the id's hash is stored.
    const rows = (await sql('SELECT * FROM console_sessions', store)).rows as Record<string, unknown>[];
    expect(rows.map((r) => r.id_hash)).toEqual([createHash('sha256').update(id).digest('hex')]);
    expect(JSON.stringify(rows)).not.toContain(id);

    // B's page carries the same CSRF token as A's: a form loaded on A posts on B.
    const csrf = Agent.csrfOf(inbox.body)!;
    expect(Agent.csrfOf((await onA.request('/inbox')).body)).toBe(csrf);
    expect((await onB.request('/sign-out', { form: { csrf } })).status).toBe(303);

    // Ended for every replica: A sends it to sign in, and refuses a state change with it.
    const after = await onA.request('/inbox');
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toMatch(/\/console\/sign-in$/);
    expect((await onA.request('/sign-out', { form: { csrf } })).status).toBe(403);
    expect((await sql('SELECT count(*)::int AS n FROM console_sessions', store)).rows[0].n).toBe(0);
  }, 60_000);
});
