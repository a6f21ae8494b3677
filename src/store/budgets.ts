/**
 * The budget table: call counts per key and fixed window, shared by every process on the store, so
 * that N gateway replicas grant a policy's rate budgets and quotas once (docs/governance.md#budgets).
 * One row per key holds the count of its current window; a call counts against all of its charges
 * at once or against none, in one statement (one charge) or one transaction (several).
 */
import { ToolEnvelopeError } from 'tool-envelope/core';

/**
 * One count a call asks for: at most `limit` calls under `key` in the window that ends at `windowEnd`
 * (ms since the epoch; windows are fixed and aligned, so every process computes the same end).
 */
export interface BudgetCharge {
  key: string;
  limit: number;
  windowEnd: number;
}

/** The table's operations, on every store (`store.budgets`). */
export interface BudgetTable {
  /**
   * Counts one call against every charge, atomically across processes: -1 when all had room (each
   * is now one higher), else the index of a charge whose window is full (then nothing was counted).
   * A row whose window ended starts over at this call.
   */
  take(charges: readonly BudgetCharge[]): Promise<number>;
  /** Deletes the rows whose window ended at or before `now`; returns how many. */
  sweep(now: number): Promise<number>;
}

/** Longest key kept as it is; a longer one is refused (policy keys are built short, see governance/budgets.ts). */
export const MAX_BUDGET_KEY = 1024;

/** Checks the charges of one call: keys non-empty and distinct, limits and window ends integers. */
export function checkCharges(charges: readonly BudgetCharge[]): void {
  if (!Array.isArray(charges)) throw new ToolEnvelopeError('invalid-option', 'budget charges must be a list');
  const seen = new Set<string>();
  for (const c of charges) {
    if (typeof c?.key !== 'string' || c.key === '' || c.key.length > MAX_BUDGET_KEY) {
      throw new ToolEnvelopeError('invalid-option', `a budget key must be a string of 1 to ${MAX_BUDGET_KEY} characters`);
    }
    if (seen.has(c.key)) throw new ToolEnvelopeError('invalid-option', `budget key ${c.key} is charged twice`);
    seen.add(c.key);
    if (!Number.isSafeInteger(c.limit) || c.limit < 1) throw new ToolEnvelopeError('invalid-option', 'a budget limit must be a positive integer');
    if (!Number.isSafeInteger(c.windowEnd)) throw new ToolEnvelopeError('invalid-option', 'a budget window end must be an integer');
  }
}

/**
 * The charges in key order: transactions that lock several rows lock them in one order, so two of
 * them never wait on each other.
 */
export function inKeyOrder(charges: readonly BudgetCharge[]): [number, BudgetCharge][] {
  return charges.map((c, i): [number, BudgetCharge] => [i, c]).sort((a, b) => (a[1].key < b[1].key ? -1 : a[1].key > b[1].key ? 1 : 0));
}

/** The in-memory table (the memory store's: one process only). */
export function createMemoryBudgets(check: () => void): BudgetTable {
  const rows = new Map<string, { windowEnd: number; count: number }>();
  return {
    async take(charges) {
      check();
      checkCharges(charges);
      // Checked whole before anything is counted: all or none, as the SQL stores do in one transaction.
      for (let i = 0; i < charges.length; i++) {
        const c = charges[i] as BudgetCharge;
        const r = rows.get(c.key);
        if (r !== undefined && r.windowEnd >= c.windowEnd && r.count >= c.limit) return i;
      }
      for (const c of charges) {
        const r = rows.get(c.key);
        if (r === undefined || r.windowEnd < c.windowEnd) rows.set(c.key, { windowEnd: c.windowEnd, count: 1 });
        else r.count++;
      }
      return -1;
    },
    async sweep(now) {
      check();
      let n = 0;
      for (const [k, r] of rows) if (r.windowEnd <= now && rows.delete(k)) n++;
      return n;
    },
  };
}
