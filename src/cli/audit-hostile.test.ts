/**
 * The audit CLI prints stored strings (tool names, principals, error text, ids) that upstream
 * servers and callers chose: written straight into a real SQLite store, hostile ones must reach the
 * terminal inert (no ESC, BEL, C1 or bidi override) and must not break a Markdown table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeApproval, makeAudit } from '../store/test-support/store-suite.js';
import * as audit from './audit.js';
import { runVerb, type VerbRun } from './test-support/run-verb.js';

const EVIL_TOOL = 'evil\u001b[2J\u001b[31mRED|col<img src=x onerror=alert(1)>\u009b2J\u202e';
const EVIL_DETAIL = 'fail \u001b]0;PWNED\u0007 \u001b[2J <script>alert(1)</script> a|b\nnext line';
const EVIL_PRINCIPAL = 'eve\u001b[8m\u0085';
const EVIL_ID = 'aud_evil\u001b[1A';
// What must never reach a terminal: C0 controls but the newline, DEL, C1, bidi overrides.
const ACTIVE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const dir = mkdtempSync(join(tmpdir(), 'te-audit-hostile-'));
const db = join(dir, 'ev.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function inert(r: VerbRun): void {
  expect(r.stdout).not.toMatch(ACTIVE);
  expect(r.stderr).not.toMatch(ACTIVE);
}

describe('audit output of hostile stored strings', () => {
  const cli = (...args: string[]) => runVerb(audit, [...args, '--store', db], { cwd: dir });
  beforeAll(async () => {
    const store = await openSqliteStore({ path: db });
    const error = { category: 'internal', code: 'boom\u001b[5m', detail: EVIL_DETAIL, retryable: false };
    await store.appendAudit([
      makeAudit({ id: 'aud_good', tool: EVIL_TOOL, sessionId: 'SESS', toolCallId: 'call_good' }),
      makeAudit({
        id: EVIL_ID,
        tool: EVIL_TOOL,
        status: 'error',
        category: 'internal',
        errorCode: 'boom\u001b[5m',
        sessionId: 'SESS',
        toolCallId: 'AUD',
        principalChain: [{ kind: 'user', id: EVIL_PRINCIPAL }],
        outcome: { status: 'error', error, artifacts: ['file:///x`\u001b[2J'] },
        callEnvelope: { schema: 'contextos.tool_call.v1', tool_call_id: 'AUD', args: { name: EVIL_TOOL } },
        resultEnvelope: { schema: 'contextos.tool_result.v1', tool_call_id: 'AUD', status: 'error', error: EVIL_DETAIL },
      }),
    ]);
    await store.createApproval(makeApproval({ id: 'apr_evil', tool: EVIL_TOOL, principalChain: [{ kind: 'user', id: EVIL_PRINCIPAL }], reason: EVIL_DETAIL }));
    await store.close();
  });

  it('failure-summary to stdout: no terminal escape, the table rows keep their two cells, no raw HTML', async () => {
    const r = await cli('failure-summary', 'SESS', '--call', 'AUD', '--out', '-');
    expect(r.code).toBe(0);
    inert(r);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe('# Failure summary: evil?[2J?[31mRED|col&lt;img src=x onerror=alert(1)>?2J? error (internal/boom?[5m)');
    const facts = lines.slice(lines.indexOf('|---|---|') + 1, lines.indexOf('## The failing call') - 1);
    expect(facts.length).toBeGreaterThan(5);
    // Two cells a row: every '|' inside a cell is escaped.
    for (const f of facts) expect(f.replace(/\\\|/g, '').split('|')).toHaveLength(4);
    expect(facts).toContain('| detail | fail ?]0;PWNED? ?[2J &lt;script>alert(1)&lt;/script> a\\|b?next line |');
    expect(facts).toContain('| audit id | aud_evil?[1A |');
    // Outside code blocks and code spans (where a viewer would render HTML), no tag opens.
    const prose = r.stdout.replace(/```json\n[^`]*\n```/g, '').replace(/`[^`\n]*`/g, '');
    expect(prose.split('\n').filter((l) => /<(img|script)/.test(l))).toEqual([]);
    // The earlier call's row in "Calls before it" keeps its 7 cells.
    const before = lines.find((l) => l.startsWith('| 1 |'))!;
    expect(before.replace(/\\\|/g, '').split('|')).toHaveLength(9);
    expect(r.stdout).toContain("- `file:///x'?[2J`");
  });

  it('failure-summary to a file: the stderr line is inert too', async () => {
    const r = await cli('failure-summary', 'SESS', '--out', 'fs.md');
    expect(r.code).toBe(0);
    inert(r);
    expect(r.stderr).toContain('failure summary of evil?[2J?[31mRED');
  });

  it('show, list, stats, approvals list and show: inert', async () => {
    for (const args of [
      ['show', 'AUD'],
      ['list', '--wide'],
      ['stats', '--wide'],
      ['approvals', '--wide'],
      ['approvals', 'show', 'apr_evil'],
    ]) {
      const r = await cli(...args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 0]);
      inert(r);
    }
    // The JSON formats: the same JSON, with DEL, C1 and bidi escaped.
    for (const args of [
      ['show', 'AUD', '--format', 'json'],
      ['list', '--format', 'json'],
      ['list', '--format', 'ndjson'],
      ['stats', '--format', 'json'],
      ['approvals', '--format', 'json'],
      ['approvals', 'show', 'apr_evil', '--format', 'json'],
    ]) {
      const r = await cli(...args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 0]);
      inert(r);
      expect(r.stdout).toContain('\\u009b2J\\u202e');
    }
    const json = JSON.parse((await cli('show', 'AUD', '--format', 'json')).stdout) as { tool: string };
    expect(json.tool).toBe(EVIL_TOOL);
    const shown = await cli('show', 'AUD');
    // JSON keeps the text, as escapes.
    expect(shown.stdout).toContain('\\u001b]0;PWNED\\u0007');
    expect(shown.stdout).toContain('\\u009b2J\\u202e');
    expect(shown.stdout).toMatch(/principals\s+user:eve\?\[8m\?/);
  });
});
