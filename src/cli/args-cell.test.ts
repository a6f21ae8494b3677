/**
 * The approver's columns at 100 columns: `audit approvals` shows every argument's key and the start
 * of its value, `audit list` the whole status. A real governed runtime pauses a destructive write
 * into a real SQLite file (plus a gateway-shaped replay record); the CLI lists them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { newAuditId } from '../store/ids.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeAudit } from '../store/test-support/store-suite.js';
import { argsCell } from './args-cell.js';
import * as audit from './audit.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(join(tmpdir(), 'te-args-cell-'));
const db = join(dir, 'calls.db');
const PATH = '/srv/share/reports/2026/q3-summary.txt';
const CONTENT = `Quarterly summary. ${'Revenue grew in every region; costs held. '.repeat(20)}`;

const writeFile = defineTool({
  name: 'write_file',
  description: 'Writes a file.',
  approvalMode: 'destructive',
  input: z.object({ path: z.string(), content: z.string(), mode: z.string() }),
  handler: async () => ({ ok: true }),
});

const append = defineTool({
  name: 'append_quarterly_report_line',
  description: 'Appends a line.',
  approvalMode: 'local_write',
  input: z.object({ line: z.string() }),
  handler: async () => ({ ok: true }),
});

beforeAll(async () => {
  const store = await openSqliteStore({ path: db });
  const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [writeFile, append] }), store, principalChain: [{ kind: 'agent', id: 'a-1' }] });
  await governed.invoke('write_file', { path: PATH, content: CONTENT, mode: 'overwrite' }, { idempotencyKey: 'w-1' });
  // A call and its replay beside a long tool name.
  for (let i = 0; i < 2; i++) await governed.invoke('append_quarterly_report_line', { line: 'x' }, { idempotencyKey: 'a-1' });
  // The gateway's longest status cell, 'completed (replay)', as the gateway records it.
  await store.appendAudit([makeAudit({ id: newAuditId(), tool: 'ev_echo', status: 'completed', replay: true, startedAt: Date.now(), idempotencyKey: 'e-1' })]);
  await governed.flush();
  await governed.close();
  await store.close();
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the arguments cell', () => {
  it('audit approvals at 100 columns: every key, the start of every value, the path before the content', async () => {
    const r = await runVerb(audit, ['approvals', '--store', db], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    for (const l of lines) expect([...l].length, l).toBeLessThanOrEqual(100);
    const row = lines[2]!;
    // Before: {"path":"/srv/s…content":"wr... (the path cut off by the content).
    expect(row).toMatch(/ path=\/srv\S*txt content="Qu\S*….*" mode=ov\S*$/);
  });

  it('fits any width: values give, longest first; trailing pairs go only when the floors do not fit', () => {
    const cell = argsCell({ path: PATH, content: CONTENT, mode: 'overwrite' });
    expect(cell.text).toBe(`path=${PATH} content=${JSON.stringify(CONTENT)} mode=overwrite`);
    for (const w of [80, 60, 46, 38]) {
      const got = cell.fit(w);
      expect([...got].length, got).toBeLessThanOrEqual(w);
      expect(got).toMatch(/^path=\/sr\S* content="Q.*" mode=ov/);
    }
    // The room is shared out evenly, shortest values whole first: a wide cell has the whole path.
    expect(cell.fit(120)).toMatch(new RegExp(`^path=${PATH} content="Q.*….*" mode=overwrite$`));
    expect(cell.fit(30)).toMatch(/^path=\S+ content="Qu.*" …$/);
    expect(cell.fit(20)).toMatch(/^path=\S+ …$/);
  });

  it('quotes keys and values that are not plain words, so a value cannot pass for another key', () => {
    const cell = argsCell({ path: '/tmp/x mode=safe', 'a b': 1, nested: { deep: [1, 2] } });
    expect(cell.text).toBe('path="/tmp/x mode=safe" "a b"=1 nested={"deep":[1,2]}');
    expect(argsCell({ bad: 'a\u001b[2Jb' }).text).toBe('bad="a\\u001b[2Jb"');
    expect(argsCell(null).text).toBe('{}');
  });
});

describe('audit list at 100 columns', () => {
  it('keeps the status whole', async () => {
    // A rejection from the CLI: a long category/code.
    const [pending] = JSON.parse((await runVerb(audit, ['approvals', '--store', db, '--format', 'json'], { cwd: dir })).stdout) as { id: string }[];
    expect((await runVerb(audit, ['approvals', 'reject', pending!.id, '--store', db], { cwd: dir })).code).toBe(0);
    const r = await runVerb(audit, ['list', '--store', db], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    for (const l of lines) expect([...l].length, l).toBeLessThanOrEqual(100);
    expect(r.stdout).toMatch(/\s+paused\s+elevat/);
    expect(r.stdout).toMatch(/\s+rejected\s+elevat/);
    expect(r.stdout).toMatch(/\s+completed \(replay\)\s/);
    expect(r.stdout).toMatch(/\s+ok \(replay\)\s/);
  });
});
