// The policy document's `redact` key: per tool, JSON pointers of values the audit log never
// stores. A governed runtime on a real SQLite file; the database files' bytes are searched.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run as gatewayCli } from '../cli/gateway.js';
import { oracleValidate } from '../../test/oracle.js';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { createMemoryStore } from '../store/memory.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { GovernancePipeline } from './pipeline.js';
import { compilePolicy, loadPolicyFile } from './policy.js';

const SSN = 'PLANTED-SSN-7731-04';
const SESSION = 'PLANTED-SESSION-99120';
const VISIBLE = 'PLANTED-VISIBLE-5521';

describe('policy redact: pointed values never reach the audit log', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-policy-redact-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const bytes = (file: string): string =>
    ['', '-wal', '-shm', '-journal']
      .map((s) => file + s)
      .filter(existsSync)
      .map((f) => readFileSync(f).toString('latin1'))
      .join('\n');

  it('redacts /args and /result pointers of the policy in the SQLite file; the tool got the real values', async () => {
    const policyFile = path.join(dir, 'policy.yaml');
    writeFileSync(policyFile, ['version: 1', 'redact:', '  crm.update:', '    - /args/customer/ssn', '    - /result/session', ''].join('\n'));
    const policy = await loadPolicyFile(policyFile);
    const seen: unknown[] = [];
    const update = defineTool({
      name: 'crm.update',
      description: 'updates a customer',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => {
        const customer = a.customer as { ssn: string; name: string };
        seen.push(customer.ssn);
        return { session: SESSION, name: customer.name };
      },
    });
    const other = defineTool({
      name: 'crm.note',
      description: 'a note',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => ({ text: a.text }),
    });
    const file = path.join(dir, 'calls.db');
    const store = await openSqliteStore({ path: file });
    const governed = createGovernedRuntime({
      runtime: createRuntime({ tools: [update, other] }),
      store,
      policy,
      operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 7)),
    });
    const outcome = await governed.invoke('crm.update', { customer: { ssn: SSN, name: 'Ada' } });
    expect(outcome.status).toBe('ok');
    // The caller and the tool see the real values; only the log's copy is redacted.
    expect(outcome.result).toEqual({ session: SESSION, name: 'Ada' });
    expect(seen).toEqual([SSN]);
    // A tool the policy does not name is logged as it is: the search below can find a planted value.
    expect((await governed.invoke('crm.note', { text: VISIBLE })).status).toBe('ok');
    await governed.flush();
    const [record] = (await store.listAudit({ tool: 'crm.update' })).records;
    expect(record!.redaction).toEqual({ pointers: expect.arrayContaining(['/callEnvelope/args/customer/ssn', '/resultEnvelope/output/session']) });
    expect((record!.callEnvelope.args as { customer: { name: string } }).customer.name).toBe('Ada');
    expect(oracleValidate('contextos-call', record!.callEnvelope).errors).toEqual([]);
    expect(oracleValidate('contextos-result', record!.resultEnvelope).errors).toEqual([]);
    await governed.close();
    await store.close();
    const text = bytes(file);
    expect(text).toContain(VISIBLE);
    expect(text).toContain('Ada');
    expect(text).not.toContain(SSN);
    expect(text).not.toContain(SESSION);
  });

  it("adds the policy's pointers to the audit writer's own, and refuses a policy that redacts when redaction is off", async () => {
    const store = createMemoryStore();
    const tool = defineTool({ name: 't', description: 't', approvalMode: 'read_only', handler: async (a: Record<string, unknown>) => a });
    const governed = createGovernedRuntime({
      runtime: createRuntime({ tools: [tool] }),
      store,
      policy: compilePolicy({ version: 1, redact: { t: ['/args/a'] } }),
      audit: { redact: { pointers: { t: ['/args/b'] } } },
    });
    await governed.invoke('t', { a: SSN, b: SESSION });
    await governed.flush();
    const [record] = (await store.listAudit({ tool: 't' })).records;
    expect(record!.callEnvelope.args).toEqual({ a: '[REDACTED]', b: '[REDACTED]' });
    await governed.close();
    expect(
      () => new GovernancePipeline({ store: createMemoryStore(), policy: compilePolicy({ version: 1, redact: { t: ['/args/a'] } }), audit: { redact: false } }),
    ).toThrow(expect.objectContaining({ code: 'invalid-option', message: expect.stringContaining('redact') }));
  });

  it('the gateway CLI refuses --no-redact with a policy file that redacts (usage error, nothing started)', async () => {
    const policyFile = path.join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ version: 1, redact: { t: ['/args/a'] } }));
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (d: Buffer) => (err += d.toString()));
    const io = { stdin: new PassThrough(), stdout: new PassThrough(), stderr, cwd: dir, env: {}, signal: new AbortController().signal };
    expect(await gatewayCli(['--policy', policyFile, '--no-redact', '--no-store', '--', 'node', 'x.js'], io)).toBe(2);
    expect(err).toMatch(/--policy file redacts values .*--no-redact/);
  });
});
