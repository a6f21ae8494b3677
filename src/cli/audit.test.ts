import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../test/oracle.js';
import { fillWithRealCalls, type Filled } from '../report/test-support/fill.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, dropSchema, freshSchema } from '../store/test-support/pg.js';
import type { AuditRecord, Store } from '../store/types.js';
import * as audit from './audit.js';
import { parseTime } from '../store/audit-filter.js';
import { redactLocation, table } from './audit-common.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(join(tmpdir(), 'te-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The audit verbs against a store filled by real gateway and governed-runtime calls. */
function auditSuite(open: () => Promise<{ store: Store; flags: string[]; cleanup: () => Promise<void> }>): void {
  let store: Store;
  let flags: string[];
  let cleanup: () => Promise<void>;
  let filled: Filled;
  let all: AuditRecord[];
  const cli = (...args: string[]) => runVerb(audit, [...args, ...flags], { cwd: dir });

  beforeAll(async () => {
    ({ store, flags, cleanup } = await open());
    filled = await fillWithRealCalls(store);
    all = (await store.listAudit({}, { limit: 1000, order: 'asc' })).records;
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  it('the store holds the gateway calls and the runtime calls', () => {
    expect(all.filter((r) => r.tool.startsWith('ev_'))).toHaveLength(filled.gatewayCalls);
    expect(all.filter((r) => r.tool.startsWith('inventory_'))).toHaveLength(filled.runtimeCalls);
  });

  it('list: an aligned table, newest first, with filters', async () => {
    // --wide: every column (the default view fits 100 columns and leaves the session out first; see table.test.ts).
    const r = await cli('list', '--wide');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^started \(UTC\)\s+id\s+tool\s+status\s+category\/code\s+ms\s+session$/);
    expect(lines).toHaveLength(2 + all.length);
    // Columns line up: every row has the id column where the header has it.
    const idCol = lines[0]!.indexOf(' id') + 1;
    for (const l of lines.slice(2)) expect(l.slice(idCol, idCol + 4)).toBe('aud_');
    expect(lines[2]).toContain(all.at(-1)!.id);

    const errors = await cli('list', '--status', 'error,blocked', '--format', 'json');
    const got = JSON.parse(errors.stdout) as { records: AuditRecord[] };
    expect(got.records.map((x) => x.id).sort()).toEqual(
      all
        .filter((x) => x.status === 'error' || x.status === 'blocked')
        .map((x) => x.id)
        .sort(),
    );
    expect(got.records.length).toBeGreaterThanOrEqual(3);

    const byTool = JSON.parse((await cli('list', '--tool', 'ev_echo', '--format', 'json')).stdout) as { records: AuditRecord[] };
    expect(byTool.records).toHaveLength(3);
    const bySession = JSON.parse((await cli('list', '--session', filled.sessionId, '--format', 'json')).stdout) as { records: AuditRecord[] };
    expect(bySession.records).toHaveLength(filled.runtimeCalls);
    const byCategory = JSON.parse((await cli('list', '--category', 'no-target', '--format', 'json')).stdout) as { records: AuditRecord[] };
    expect(byCategory.records.map((x) => x.toolCallId)).toEqual([filled.failingCallId]);
    const future = await cli('list', '--since', new Date(Date.now() + 3_600_000).toISOString());
    expect(future.stdout).toBe('No calls match.\n');
    const recent = JSON.parse((await cli('list', '--since', '1h', '--until', String(Date.now() + 1000), '--format', 'json')).stdout) as {
      records: AuditRecord[];
    };
    expect(recent.records).toHaveLength(all.length);

    const page1 = JSON.parse((await cli('list', '--limit', '4', '--order', 'asc', '--format', 'json')).stdout) as {
      records: AuditRecord[];
      nextCursor: string;
    };
    expect(page1.records.map((x) => x.id)).toEqual(all.slice(0, 4).map((x) => x.id));
    const page2 = JSON.parse((await cli('list', '--limit', '4', '--order', 'asc', '--cursor', page1.nextCursor, '--format', 'json')).stdout) as {
      records: AuditRecord[];
    };
    expect(page2.records.map((x) => x.id)).toEqual(all.slice(4, 8).map((x) => x.id));
    const ndjson = (await cli('list', '--format', 'ndjson')).stdout.trimEnd().split('\n');
    expect(ndjson).toHaveLength(all.length);
  });

  it('show: facts and both envelopes, by audit id or tool call id', async () => {
    const failing = all.find((x) => x.toolCallId === filled.failingCallId)!;
    const r = await cli('show', failing.id);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^id\s+aud_/);
    expect(r.stdout).toContain('no-target/sku-not-found');
    expect(r.stdout).toContain('user:u-7 → agent:agent-1');
    const callJson = r.stdout.slice(r.stdout.indexOf('Call envelope:\n') + 15, r.stdout.indexOf('\n\nResult envelope:'));
    const resultJson = r.stdout.slice(r.stdout.indexOf('Result envelope:\n') + 17);
    expect(oracleValidate('contextos-call', JSON.parse(callJson)).valid).toBe(true);
    expect(oracleValidate('contextos-result', JSON.parse(resultJson))).toEqual({ valid: true, errors: [] });
    const byCallId = JSON.parse((await cli('show', filled.failingCallId, '--format', 'json')).stdout) as AuditRecord;
    expect(byCallId.id).toBe(failing.id);
    const missing = await cli('show', 'aud_nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no call with id "aud_nope"');
  });

  it('stats: per tool calls, error rate by category, p50/p95/p99', async () => {
    const r = await cli('stats');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    // At 100 columns the maximum latency and p95 are left out so that tool names stay whole; --wide has them.
    expect(lines[0]).toMatch(/^tool\s+calls\s+replays\s+paused\s+errors\s+error rate\s+p50 ms\s+p99 ms\s+errors by category$/);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(100);
    const wide = (await cli('stats', '--wide')).stdout.split('\n');
    expect(wide[0]).toMatch(/^tool\s+calls\s+replays\s+paused\s+errors\s+error rate\s+p50 ms\s+p95 ms\s+p99 ms\s+max ms\s+errors by category$/);
    const lookupRow = lines.find((l) => l.startsWith('inventory_lookup'))!;
    expect(lookupRow).toMatch(/inventory_lookup\s+3\s+0\s+0\s+1\s+33\.3%/);
    expect(lookupRow).toContain('no-target 1 (33.3%)');
    // The paused purge carries a category but is neither an error nor a call (it has not run): the
    // blocked one is the call, and its error.
    expect(lines.find((l) => l.startsWith('inventory_purge'))).toMatch(/inventory_purge\s+1\s+0\s+1\s+1\s+100\.0%.*elevation 1 \(100\.0%\)$/);
    const pauses = all.filter((x) => x.status === 'paused').length;
    expect(pauses).toBe(1);
    expect(lines.at(-1)).toMatch(new RegExp(`^\\(all\\)\\s+${all.length - pauses}\\s+0\\s+${pauses}\\s`));
    const json = JSON.parse((await cli('stats', '--format', 'json')).stdout) as {
      tool: string;
      count: number;
      errorRate: number;
      latencyMs: { p50: number; p99: number };
    }[];
    expect(json.find((s) => s.tool === 'ev_echo')?.count).toBe(3);
    expect(json.find((s) => s.tool === 'ev_get-sum')?.errorRate).toBe(0.5);
    for (const s of json) expect(s.latencyMs.p99).toBeGreaterThanOrEqual(s.latencyMs.p50);
  });

  it('export --format ndjson: every record, oldest first, envelopes valid', async () => {
    const r = await cli('export', '--format', 'ndjson');
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditRecord);
    expect(lines.map((x) => x.id)).toEqual(all.map((x) => x.id));
    for (const x of lines) expect(oracleValidate('contextos-result', x.resultEnvelope).valid).toBe(true);
    const toFile = await cli('export', '--status', 'error', '--out', 'errors.ndjson');
    expect(toFile.code).toBe(0);
    expect(readFileSync(join(dir, 'errors.ndjson'), 'utf8').trimEnd().split('\n')).toHaveLength(all.filter((x) => x.status === 'error').length);
    expect((await cli('export', '--format', 'csv')).code).toBe(2);
  });

  it('approvals: lists the pending request of the paused call', async () => {
    const r = await cli('approvals');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(filled.approvalId);
    expect(r.stdout).toContain('inventory_purge');
    expect(r.stdout).toContain('warehouse=north');
    const shown = await cli('approvals', 'show', filled.approvalId);
    expect(shown.stdout).toMatch(/state\s+pending/);
    expect((await cli('approvals', 'show', 'apr_nope')).code).toBe(1);
    // The approver is the OS user running the CLI: naming someone else is a refused decision (exit 1), and it stays pending.
    const other = await cli('approvals', 'approve', filled.approvalId, '--approver', 'someone-else');
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('--approver cannot name anyone else');
    expect((await cli('approvals', 'show', filled.approvalId)).stdout).toMatch(/state\s+pending/);
  });

  it('failure-summary: the failing call, its envelopes, the last good observation, the calls before it, the artifacts', async () => {
    const out = `summary-${Math.random().toString(36).slice(2)}.md`;
    // By default the session's latest failure: the blocked purge.
    const latest = await cli('failure-summary', filled.sessionId, '--out', '-');
    expect(latest.code).toBe(0);
    expect(latest.stdout).toMatch(/^# Failure summary: inventory_purge blocked \(elevation\/policy-denied\)/);
    expect(latest.stdout).toContain('The session has 2 failing calls; this is the latest.');
    const r = await cli('failure-summary', filled.sessionId, '--call', filled.failingCallId, '--out', out);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`written to ${out}`);
    const md = readFileSync(join(dir, out), 'utf8');
    expect(md).toMatch(/^# Failure summary: inventory_lookup error \(no-target\/sku-not-found\)/);
    expect(md).toContain(`| tool call id | ${filled.failingCallId} |`);
    expect(md).toContain('"sku": "missing-9"');
    // The MCEC envelope block is a valid MCEC document with the last good observation.
    const mcec = JSON.parse(/MCEC envelope:\n\n```json\n([\s\S]*?)\n```/.exec(md)![1]!);
    expect(oracleValidate('mcec', mcec)).toEqual({ valid: true, errors: [] });
    expect(mcec).toMatchObject({ ok: false, error: { category: 'no-target', code: 'sku-not-found' } });
    const observed = mcec.error.lastObservation;
    expect(observed).toBeTruthy();
    expect(md).toContain('## Last good observation');
    expect(md).toContain('B-2000');
    expect(md).toMatch(/## Calls before it \(2, oldest first\)[\s\S]*\| 1 \| .* \| inventory_lookup \| ok \|[\s\S]*\| 2 \| .* \| inventory_lookup \| ok \|/);
    expect(md).toContain('- `file:///var/inventory/A-100.json`');
    expect(md).toContain('- `file:///var/inventory/B-2000.json`');
    // A session without failures, and an unknown one: exit 1.
    const none = await cli('failure-summary', 'sess-none', '--out', '-');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no failing call in session "sess-none"');
    // A chosen call by audit id.
    const blocked = all.find((x) => x.status === 'blocked')!;
    const chosen = await cli('failure-summary', filled.sessionId, '--call', blocked.id, '--out', '-');
    expect(chosen.stdout).toMatch(/^# Failure summary: inventory_purge blocked \(elevation\/policy-denied\)/);
    expect(chosen.stdout).toMatch(/## Calls before it \(4, oldest first\)/);
  });

  it('report --html: one page with the tools of the log', async () => {
    const r = await cli('report', '--html', 'audit-report.html');
    expect(r.code).toBe(0);
    const html = readFileSync(join(dir, 'audit-report.html'), 'utf8');
    for (const tool of ['ev_echo', 'ev_get-sum', 'inventory_lookup', 'inventory_purge']) expect(html).toContain(`data-tool="${tool}"`);
    // Counted as stats counts: the paused purge is a pause, not a call.
    const pauses = all.filter((x) => x.status === 'paused').length;
    expect(pauses).toBe(1);
    expect(html).toContain(`<b id="total-calls">${all.length - pauses}</b>`);
    expect(html).toContain(`<b id="paused">${pauses}</b>`);
  });
}

describe('audit verbs on SQLite', () => {
  auditSuite(async () => {
    const path = join(dir, `audit-${Math.random().toString(36).slice(2)}.db`);
    const store = await openSqliteStore({ path });
    return { store, flags: ['--store', path], cleanup: async () => {} };
  });
});

describePg('audit verbs on PostgreSQL', (url) => {
  auditSuite(async () => {
    const schema = freshSchema();
    const store = await openPostgresStore({ connectionString: url, schema });
    return { store, flags: ['--store', url, '--pg-schema', schema], cleanup: () => dropSchema(url, schema) };
  });
});

describe('audit usage', () => {
  it('exit 2 with one line for usage errors; --help for every sub-verb', async () => {
    const path = join(dir, 'usage.db');
    (await openSqliteStore({ path })).close();
    const bad = [
      ['list', '--status', 'nope', '--store', path],
      ['list', '--category', 'oops', '--store', path],
      ['list', '--since', 'yesterday', '--store', path],
      ['list', '--limit', '0', '--store', path],
      ['list', '--store', join(dir, 'missing.db')],
      ['list', '--pg-schema', 'x', '--store', path],
      ['frobnicate'],
      ['show', '--store', path],
      ['report', '--store', path],
      ['approvals', 'reject', 'apr_1', '--approver', 'bob', '--wait', '5', '--store', path],
    ];
    for (const args of bad) {
      const r = await runVerb(audit, args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^tool-envelope audit/);
    }
    for (const sub of ['list', 'show', 'stats', 'export', 'approvals', 'failure-summary', 'report']) {
      const text = await audit.helpFor([sub, '--help']);
      expect(text, sub).toContain(`tool-envelope audit ${sub}`);
      expect(text, sub).toMatch(/Examples:\n {2}tool-envelope audit/);
      const r = await runVerb(audit, [sub, '--help']);
      expect(r.stdout).toBe(text);
    }
  });

  it('through the real command: sub-verb --help, exit codes', () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const cmd = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', main, ...args], { encoding: 'utf8', env: { ...process.env, TOOL_ENVELOPE_STORE: '' } });
    const listHelp = cmd('audit', 'list', '--help');
    expect(listHelp.status).toBe(0);
    expect(listHelp.stdout).toMatch(/^tool-envelope audit list \[filters\]/);
    const auditHelp = cmd('audit', '--help');
    expect(auditHelp.stdout).toMatch(/^tool-envelope audit <sub-verb>/);
    const missing = cmd('audit', 'stats', '--store', join(dir, 'nowhere.db'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('no store at');
  });

  it('parses times and aligns tables', () => {
    expect(parseTime('2h', 10_000_000)).toBe(2_800_000);
    expect(parseTime('90s', 100_000)).toBe(10_000);
    expect(parseTime('1735689600000')).toBe(1735689600000);
    expect(parseTime('2025-01-01T00:00:00Z')).toBe(1735689600000);
    expect(parseTime('soon')).toBeUndefined();
    expect(redactLocation('postgres://app:s3cret@db/agents')).toBe('postgres://app:***@db/agents');
    expect(redactLocation('/var/lib/te.db')).toBe('/var/lib/te.db');
    expect(
      table(
        ['tool', 'calls'],
        [
          ['fs.read', '12'],
          ['a\u001b[2J', '3'],
        ],
        new Set(['calls']),
      ),
    ).toBe('tool     calls\n-------  -----\nfs.read     12\na?[2J        3\n');
  });
});
