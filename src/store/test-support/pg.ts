/**
 * Test helpers for PostgreSQL: the URL the global setup provides, a describe that needs it,
 * and throwaway schemas so test files running in parallel never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, inject, it } from 'vitest';

/** The test server's URL, or undefined when there is none. */
export function pgUrl(): string | undefined {
  return inject('pgUrl') || undefined;
}

/**
 * `describe` for tests that need PostgreSQL. Without a server: under `CI=true` one failing test
 * says why; otherwise the block is reported as skipped and the reason printed.
 */
export function describePg(name: string, fn: (url: string) => void): void {
  const url = pgUrl();
  if (url) {
    describe(name, () => fn(url));
    return;
  }
  const reason = inject('pgUnavailableReason') || 'no PostgreSQL server';
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs a PostgreSQL server', () => {
        throw new Error(`PostgreSQL tests cannot run: ${reason}`);
      });
    });
  } else {
    console.warn(`[${name}] NOT RUN: ${reason}`);
    describe.skip(`${name} (not run: ${reason})`, () => fn(''));
  }
}

/** A fresh schema name for one test's tables. */
export function freshSchema(): string {
  return `te_${randomBytes(6).toString('hex')}`;
}

/** Drops a schema created by a test. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
