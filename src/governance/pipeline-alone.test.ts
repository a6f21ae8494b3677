// One call at a time, the governance pipeline logs its records `alone`: over a real SQLite file each
// is committed on the calling thread before the rest of the event-loop turn runs (no tick of
// waiting per record); the records of calls in flight together still wait for the turn and share commits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ToolCall, ToolOutcome } from '../core/model.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { useReferenceAuditCommits } from '../store/sqlite/audit-worker.js';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/index.js';
import { GovernancePipeline } from './pipeline.js';
import type { GovernedCall } from './pipeline-types.js';

const key = operatorKeyFromSecret(Buffer.alloc(32, 3));
let n = 0;
const input = (): GovernedCall => {
  n++;
  return {
    tool: 'notes.read',
    ceiling: 'read_only',
    args: { n },
    principalChain: [{ kind: 'user', id: 'u' }],
    toolCallId: `c${n}`,
    runId: `r${n}`,
    traceId: `t${n}`,
  };
};
const execute = async (_call: ToolCall): Promise<ToolOutcome> => ({ status: 'ok', result: { read: true } });
/** Transactions committed on the calling thread (see store/sqlite/commit-here.ts). */
const here = (store: SqliteStore): number | undefined => (store as unknown as { here?: { commits: number } }).here?.commits;

describe('governance pipeline: one call at a time over SQLite', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'te-alone-'));
  });
  afterEach(() => {
    useReferenceAuditCommits(false);
    rmSync(dir, { recursive: true, force: true });
  });

  it("commits a lone call's started record and outcome within the turn; concurrent calls' records share commits", async () => {
    const store = await openSqliteStore({ path: join(dir, 'calls.db'), chainKey: key });
    const pipeline = new GovernancePipeline({ store, operatorKey: key });
    for (let i = 0; i < 3; i++) {
      let turned = false;
      setImmediate(() => {
        turned = true;
      });
      const outcome = await pipeline.run(input(), execute);
      expect(outcome.status).toBe('ok');
      expect(turned).toBe(false);
    }
    expect(here(store)).toBe(6);
    expect(await store.countAudit({ status: 'ok' })).toBe(3);
    // Four at once: their started records are gathered over the turn into one commit, then their outcomes into another.
    const before = here(store) as number;
    await Promise.all(Array.from({ length: 4 }, () => pipeline.run(input(), execute)));
    expect((here(store) as number) - before).toBe(2);
    expect(await store.countAudit({ status: 'ok' })).toBe(7);
    // With a call in flight, the next call's records wait for the turn, where other calls' records may join them.
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slow = pipeline.run(input(), async () => {
      await gate;
      return { status: 'ok', result: {} };
    });
    await new Promise((r) => setImmediate(r));
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    let turnedBeforeItRan: boolean | undefined;
    await pipeline.run(input(), async () => {
      turnedBeforeItRan = turned;
      return { status: 'ok', result: {} };
    });
    expect(turnedBeforeItRan).toBe(true);
    release();
    expect((await slow).status).toBe('ok');
    expect(await store.countAudit({ status: 'ok' })).toBe(9);
    await pipeline.close();
    await store.close();
  });

  it('under the reference every record waits for the turn, and is committed all the same', async () => {
    useReferenceAuditCommits(true);
    const store = await openSqliteStore({ path: join(dir, 'reference.db'), chainKey: key });
    const pipeline = new GovernancePipeline({ store, operatorKey: key });
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    expect((await pipeline.run(input(), execute)).status).toBe('ok');
    expect(turned).toBe(true);
    expect(await store.countAudit({ status: 'ok' })).toBe(1);
    await pipeline.close();
    await store.close();
  });
});
