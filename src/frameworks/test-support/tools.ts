// Test fixture shared by the three framework adapters: tools for success, every failure category,
// a thrown error, a timeout and a destructive call, counted; and a governed runtime on a real SQLite file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { z } from 'zod';
import { ERROR_CATEGORIES } from '../../core/taxonomy.js';
import { createGovernedRuntime, type GovernedRuntime } from '../../runtime/governed.js';
import { defineTool } from '../../runtime/define.js';
import type { Policy } from '../../governance/policy.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { openSqliteStore, type SqliteStore } from '../../store/sqlite/index.js';

/** How many times each handler ran. */
export interface Counters {
  deletes: string[];
  reads: number;
}

/** The fixture's tools, with fresh counters. */
export function fixtureTools(counters: Counters) {
  return [
    defineTool({
      name: 'notes.read',
      description: 'Reads a note by id.',
      input: z.object({ id: z.string().min(1) }),
      approvalMode: 'read_only',
      handler: async ({ id }, ctx) => {
        counters.reads++;
        if (id === 'welcome') return { id, text: 'Hello from tool-envelope.' };
        return ctx.fail({ category: 'no-target', code: 'note-not-found', detail: `No note "${id}".`, remediation: 'List the notes first.' });
      },
    }),
    defineTool({
      name: 'fail',
      description: 'Fails with the category asked for.',
      input: z.object({ category: z.enum(ERROR_CATEGORIES) }),
      approvalMode: 'read_only',
      handler: async ({ category }, ctx) => ctx.fail({ category, code: `${category}-failure`, detail: `Failed with ${category}.` }),
    }),
    defineTool({
      name: 'boom',
      description: 'Throws.',
      approvalMode: 'read_only',
      handler: async () => {
        throw new TypeError('Cannot read properties of undefined');
      },
    }),
    defineTool({
      name: 'slow',
      description: 'Never answers.',
      approvalMode: 'read_only',
      timeoutMs: 50,
      handler: () => new Promise<never>(() => {}),
    }),
    defineTool({
      name: 'repo.delete',
      description: 'Deletes a repository.',
      input: z.object({ name: z.string() }),
      approvalMode: 'destructive',
      handler: async ({ name }) => {
        counters.deletes.push(name);
        return { deleted: name };
      },
    }),
  ];
}

/** A plain runtime over the fixture's tools. */
export function plainFixture(): { runtime: Runtime; counters: Counters } {
  const counters: Counters = { deletes: [], reads: 0 };
  return { runtime: createRuntime({ tools: fixtureTools(counters) }), counters };
}

/** A governed runtime over the fixture's tools, on a fresh SQLite file. */
export async function governedFixture(
  policy?: Policy,
): Promise<{ governed: GovernedRuntime; store: SqliteStore; counters: Counters; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-frameworks-'));
  const store = await openSqliteStore({ path: path.join(dir, 'calls.db') });
  const { runtime, counters } = plainFixture();
  const governed = createGovernedRuntime({ runtime, store, ...(policy && { policy }) });
  return {
    governed,
    store,
    counters,
    cleanup: async () => {
      await governed.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Either fixture, as one shape: the source to hand an adapter, and the governed parts when there are any. */
export async function fixture(governedRun: boolean): Promise<{
  source: Runtime | GovernedRuntime;
  counters: Counters;
  governed?: GovernedRuntime;
  store?: SqliteStore;
  cleanup: () => Promise<void>;
}> {
  if (governedRun) {
    const fx = await governedFixture();
    return { ...fx, source: fx.governed };
  }
  const { runtime, counters } = plainFixture();
  return { source: runtime, counters, cleanup: async () => {} };
}

/** Registers an afterEach that runs (and forgets) every cleanup pushed to the returned list. */
export function cleanupsAfterEach(): Array<() => Promise<void>> {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  return cleanups;
}
