/**
 * The budget table on SQLite (migration 7), on the store's own connection: one upsert per charge,
 * several in one immediate transaction (see ../budgets.ts).
 */
import type Database from 'better-sqlite3';
import { type BudgetCharge, type BudgetTable, checkCharges, inKeyOrder } from '../budgets.js';
import { storeFailure } from '../guards.js';

/**
 * Counts the call unless the row's current window is full; a row of an ended window starts over.
 * With the WHERE false nothing changes and nothing is returned: the window is full.
 */
const TAKE_SQL = `INSERT INTO budget_counts (key, window_end, count) VALUES (?, ?, 1)
ON CONFLICT (key) DO UPDATE SET
  count = CASE WHEN budget_counts.window_end < excluded.window_end THEN 1 ELSE budget_counts.count + 1 END,
  window_end = max(budget_counts.window_end, excluded.window_end)
WHERE budget_counts.window_end < excluded.window_end OR budget_counts.count < ?
RETURNING count`;

/** Thrown inside the transaction to roll it back; carries the refused charge's index. */
class Full {
  constructor(readonly index: number) {}
}

/** The table over one open connection; `check` throws when the store is closed. */
export function sqliteBudgets(db: Database.Database, check: () => void): BudgetTable {
  let stmts: { take: Database.Statement; sweep: Database.Statement } | undefined;
  // Prepared on first use: a store whose policy has no budget pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      take: db.prepare(TAKE_SQL),
      sweep: db.prepare('DELETE FROM budget_counts WHERE window_end <= ?'),
    });
  const one = (c: BudgetCharge): boolean => prepared().take.get(c.key, c.windowEnd, c.limit) !== undefined;
  let several: Database.Transaction<(charges: readonly BudgetCharge[]) => void> | undefined;
  return {
    async take(charges) {
      check();
      checkCharges(charges);
      if (charges.length === 0) return -1;
      try {
        // One statement is its own transaction; several share one, rolled back when any window is full.
        if (charges.length === 1) return one(charges[0] as BudgetCharge) ? -1 : 0;
        several ??= db.transaction((cs: readonly BudgetCharge[]) => {
          for (const [i, c] of inKeyOrder(cs)) if (!one(c)) throw new Full(i);
        });
        several.immediate(charges);
        return -1;
      } catch (e) {
        if (e instanceof Full) return e.index;
        throw storeFailure('sqlite budget take failed', e);
      }
    },
    async sweep(now) {
      check();
      try {
        return prepared().sweep.run(now).changes;
      } catch (e) {
        throw storeFailure('sqlite budget sweep failed', e);
      }
    },
  };
}
