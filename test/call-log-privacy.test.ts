/**
 * Secrets and file modes of the call log, end to end: a real gateway process over Streamable HTTP
 * on a SQLite store, a real SDK client, the real upstream; then the CLI's export, show, report
 * and failure summary. A secret planted in arguments and results (under a secret key, in a secret
 * format, in a query string) is in none of the files (byte search), every file is 0600 under
 * umask 022; with `--no-redact` the secret is there and every record says redaction was off (so
 * the byte search can fail). Values that look like nothing
 * secret are redacted at the JSON pointers the gateway config file's `redact` key names.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as audit from '../src/cli/audit.js';
import { runVerb } from '../src/cli/test-support/run-verb.js';
import { httpClient, repoRoot, tempDir } from '../src/mcp/test-support/harness.js';
import { parseGatewayConfig } from '../src/mcp/gateway/config.js';
import { defineTool } from '../src/runtime/define.js';
import { createGovernedRuntime } from '../src/runtime/governed.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { oracleValidate } from './oracle.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const GITHUB = `ghp_${'Q7'.repeat(18)}`;
const BEARER = 'Bearer planted.Bearer-Secret_0123';
const PASSWORD = 'hunter2-planted-password';
const DSN_PASSWORD = 'pl4nted-dsn-pass';
/**
 * Secrets in query strings, under a key that names nothing secret: each parameter name of issue #41
 * in a path with no scheme, in a URL (another case), and in an `&`-list (upper case).
 */
const QUERY_STRINGS = (['password', 'token', 'api_key', 'access_token', 'secret', 'sig'] as const).flatMap((name, i) => {
  const mixed = name.replace(/(^|_)([a-z])/g, (_, sep: string, c: string) => sep + c.toUpperCase());
  return [
    [`/srv/app-${i}.conf?${name}=`, `qs${i}path-planted-value`],
    [`https://api.example.com/v1/x?page=2&${mixed}=`, `qs${i}url-planted-value`],
    [`a=1&${name.toUpperCase()}=`, `qs${i}list-planted-value`],
  ] as const;
});
const QUERY_SECRETS = QUERY_STRINGS.map(([, value]) => value);
const SECRETS = [GITHUB, 'planted.Bearer-Secret_0123', PASSWORD, DSN_PASSWORD, ...QUERY_SECRETS];

const mode = (f: string): number => statSync(f).mode & 0o777;

async function gateway(dir: string, db: string, extra: string[], upstream = ['--', process.execPath, COUNTING]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [MAIN, 'gateway', '--http', '0', '--store', db, ...extra, ...upstream], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const deadline = Date.now() + 20_000;
  while (!/MCP endpoint.*(http:\/\/\S+)/.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, url: /MCP endpoint.*(http:\/\/\S+)/.exec(out)![1]! };
}

async function callWithSecrets(url: string): Promise<void> {
  const { client } = await httpClient(url);
  // Secrets in the arguments (a secret key, a DSN, query strings) and, echoed by the upstream, in the result.
  const queries = QUERY_STRINGS.map(([before, value]) => `${before}${value}`);
  await client.callTool({
    name: 'write_note',
    arguments: {
      text: `deploy with ${GITHUB} and ${BEARER}; read ${queries.join(' and ')}`,
      password: PASSWORD,
      dsn: `postgres://app:${DSN_PASSWORD}@db/x`,
      paths: queries,
    },
  });
  // A failing call carrying a secret: the failure summary's subject.
  await client.callTool({ name: 'write_note', arguments: { api_key: PASSWORD } });
  await client.close();
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

function leaks(file: string): string[] {
  const bytes = readFileSync(file);
  return SECRETS.filter((s) => bytes.includes(Buffer.from(s)));
}

describe('the call log keeps secrets out, in private files', () => {
  let dir: string;
  let umask: number;
  beforeAll(() => {
    umask = process.umask(0o022);
    dir = tempDir();
  });
  afterAll(() => {
    process.umask(umask);
    rmSync(dir, { recursive: true, force: true });
  });

  it('redacts planted secrets from the database, WAL, export, show, report and failure summary; all 0600', async () => {
    const db = join(dir, 'calls.db');
    const gw = await gateway(dir, db, []);
    try {
      await callWithSecrets(gw.url);
      // While the gateway runs, its WAL and SHM exist: searched and checked too.
      for (const f of [db, `${db}-wal`, `${db}-shm`]) {
        expect(existsSync(f)).toBe(true);
        expect([f, mode(f)]).toEqual([f, 0o600]);
        expect([f, leaks(f)]).toEqual([f, []]);
      }
    } finally {
      await stop(gw.child);
    }
    expect(leaks(db)).toEqual([]);
    const store = await openSqliteStore({ path: db, auditWorker: false });
    const records = (await store.listAudit({}, { order: 'asc' })).records;
    await store.close();
    expect(records.map((r) => r.status)).toEqual(['ok', 'error']);
    const [good, bad] = records as [(typeof records)[0], (typeof records)[0]];
    expect(good.redaction).toEqual({ pointers: expect.arrayContaining(['/callEnvelope/args/password', '/callEnvelope/args/text', '/callEnvelope/args/dsn']) });
    expect(JSON.stringify(good.redaction)).not.toContain('hunter2');
    // Only the values went: each parameter's name and the rest of its string stay.
    expect((good.callEnvelope.args as { paths: unknown }).paths).toEqual(QUERY_STRINGS.map(([before]) => `${before}[REDACTED]`));

    const cli = (...args: string[]) => runVerb(audit, [...args, '--store', db], { cwd: dir });
    const exported = await cli('export', '--out', 'calls.ndjson');
    expect(exported.code).toBe(0);
    const shown = await cli('show', good.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('[REDACTED]');
    expect(SECRETS.filter((s) => shown.stdout.includes(s))).toEqual([]);
    expect((await cli('report', '--html', 'report.html')).code).toBe(0);
    expect((await cli('failure-summary', bad.sessionId as string, '--call', bad.id, '--out', 'summary.md')).code).toBe(0);
    for (const f of ['calls.ndjson', 'report.html', 'summary.md'].map((n) => join(dir, n))) {
      expect([f, mode(f)]).toEqual([f, 0o600]);
      expect([f, leaks(f)]).toEqual([f, []]);
    }
    expect(readFileSync(join(dir, 'summary.md'), 'utf8')).toContain('[REDACTED]');
  });

  it('with --no-redact stores the values verbatim and says so in every record', async () => {
    const db = join(dir, 'verbatim.db');
    const gw = await gateway(dir, db, ['--no-redact']);
    try {
      await callWithSecrets(gw.url);
    } finally {
      await stop(gw.child);
    }
    expect(leaks(db)).toEqual(SECRETS);
    const store = await openSqliteStore({ path: db, auditWorker: false });
    const records = (await store.listAudit({}, { order: 'asc' })).records;
    await store.close();
    expect(records.map((r) => r.redaction)).toEqual([{ off: true }, { off: true }]);
  });

  it("redacts the values at the config file's `redact` pointers (and the --redact flags') from the database, export and show", async () => {
    const db = join(dir, 'pointers.db');
    // Nothing about these values looks secret: only the pointers can keep them out.
    const ORDER = 'order-4471-planted-text';
    const TICKET = 'ticket-9912-planted-flag';
    const config = join(dir, 'gateway.json');
    writeFileSync(
      config,
      JSON.stringify({
        upstreams: [{ name: 'notes', command: process.execPath, args: [COUNTING] }],
        redact: { write_note: ['/args/text', '/result/written'] },
      }),
    );
    const gw = await gateway(dir, db, ['--redact', 'write_note=/args/ticket'], ['--config', config]);
    try {
      const { client } = await httpClient(gw.url);
      const answer = await client.callTool({ name: 'write_note', arguments: { text: ORDER, ticket: TICKET } });
      // The upstream got the real value and answered with it.
      expect(JSON.stringify(answer)).toContain(ORDER);
      await client.close();
    } finally {
      await stop(gw.child);
    }
    const planted = (file: string): string[] => [ORDER, TICKET].filter((s) => readFileSync(file).includes(Buffer.from(s)));
    expect(planted(db)).toEqual([]);
    const store = await openSqliteStore({ path: db, auditWorker: false });
    const [record] = (await store.listAudit({ tool: 'write_note' })).records;
    await store.close();
    expect(record?.redaction).toEqual({
      pointers: expect.arrayContaining(['/callEnvelope/args/text', '/callEnvelope/args/ticket', '/resultEnvelope/output/written']),
    });
    const cli = (...args: string[]) => runVerb(audit, [...args, '--store', db], { cwd: dir });
    expect((await cli('export', '--out', 'pointers.ndjson')).code).toBe(0);
    expect(planted(join(dir, 'pointers.ndjson'))).toEqual([]);
    const shown = await cli('show', record!.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('[REDACTED]');
    expect([ORDER, TICKET].filter((s) => shown.stdout.includes(s))).toEqual([]);
  });

  it("redacts the values at a governed runtime's redaction pointers from the file (started and completed records); the handler gets them", async () => {
    const db = join(dir, 'governed.db');
    const SSN = '078-05-1120-planted';
    const ROUTING = 'routing-3301-planted';
    const seen: unknown[] = [];
    const update = defineTool({
      name: 'crm.update',
      description: 'updates a customer',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => {
        seen.push((a.customer as { ssn: string }).ssn);
        return { saved: true, bank: { routing: ROUTING } };
      },
    });
    const store = await openSqliteStore({ path: db });
    const governed = createGovernedRuntime({
      runtime: createRuntime({ tools: [update] }),
      store,
      audit: { redact: { pointers: { 'crm.update': ['/args/customer/ssn', '/result/bank/routing'] } } },
    });
    const outcome = await governed.invoke('crm.update', { customer: { ssn: SSN, name: 'Ada' } });
    await governed.close();
    await store.close();
    // The caller and the handler see the real values; the log does not.
    expect(seen).toEqual([SSN]);
    expect(JSON.stringify(outcome)).toContain(ROUTING);
    const planted = (file: string): string[] => [SSN, ROUTING].filter((s) => existsSync(file) && readFileSync(file).includes(Buffer.from(s)));
    expect([db, `${db}-wal`].flatMap(planted)).toEqual([]);
    const reader = await openSqliteStore({ path: db, auditWorker: false });
    const records = (await reader.listAudit({ tool: 'crm.update' })).records;
    const started = reader.db.prepare("SELECT body FROM audit WHERE status = 'started'").all() as { body: string }[];
    await reader.close();
    expect(started).toHaveLength(1);
    expect(started[0]!.body).toContain('[REDACTED]');
    expect(records).toHaveLength(1);
    const [record] = records as [(typeof records)[0]];
    expect(record.callEnvelope.args).toEqual({ customer: { ssn: '[REDACTED]', name: 'Ada' } });
    expect(record.redaction).toEqual({
      pointers: expect.arrayContaining(['/callEnvelope/args/customer/ssn', '/resultEnvelope/output/bank/routing']),
    });
    // The outcome's result is the result envelope's output, stored once: redacted with it.
    expect((record.outcome.result as { bank: unknown }).bank).toEqual({ routing: '[REDACTED]' });
    // Still valid envelopes after redaction.
    expect(oracleValidate('contextos-call', record.callEnvelope).errors).toEqual([]);
    expect(oracleValidate('contextos-result', record.resultEnvelope).errors).toEqual([]);
  });

  it("rejects a config file's `redact` key that is not tool -> pointers under /args or /result, naming where", () => {
    const upstreams = [{ command: 'node' }];
    const parse = (redact: unknown) => () => parseGatewayConfig({ upstreams, redact }, dir, 'gw.json');
    expect(parse(['/args/a'])).toThrow(/gw\.json\.redact: must be an object/);
    expect(parse({ t: '/args/a' })).toThrow(/gw\.json\.redact\.t: must be a list/);
    expect(parse({ t: ['/oops/a'] })).toThrow(/gw\.json\.redact: .*must start with \/args\/ or \/result\//);
    expect(parseGatewayConfig({ upstreams, redact: { t: ['/args/a'] } }, dir).redact).toEqual({ t: ['/args/a'] });
  });
});
