/**
 * Test helpers for PostgreSQL: the URL the global setup provides, a describe that needs it,
 * and throwaway schemas so test files running in parallel never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { describeWith } from '../../../test/prereqs.js';

/** The test server's URL, or undefined when there is none. */
export function pgUrl(): string | undefined {
  return inject('pgUrl') || undefined;
}

/**
 * `describe` for tests that need PostgreSQL. Without a server, one failing test says why (what to
 * install, or which variable to set): never a skip.
 */
export function describePg(name: string, fn: (url: string) => void): void {
  describeWith(name, pgUrl(), 'a PostgreSQL server', inject('pgUnavailableReason') || 'no PostgreSQL server', fn);
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

/**
 * Inside a `describePg`: a function that names a fresh schema each call, every one dropped after
 * the suite's tests.
 */
export function freshSchemas(url: string): () => string {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const s of schemas) await dropSchema(url, s);
  });
  return () => {
    const schema = freshSchema();
    schemas.push(schema);
    return schema;
  };
}
