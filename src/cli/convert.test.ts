import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { oracleValidate } from '../../test/oracle.js';
import * as convertVerb from './convert.js';
import { SAMPLES, ndjson } from './test-support/envelopes.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-convert-'));
function file(name: string, text: string): string {
  writeFileSync(path.join(dir, name), text);
  return name;
}
const LOSS_LINE = /^doc \d+: \/\S* [a-z0-9-]+: .+$/;

describe('tool-envelope convert', () => {
  it('converts NDJSON to NDJSON, every output valid against the published target schema', async () => {
    const f = file('in.ndjson', ndjson(SAMPLES.mcecOk, SAMPLES.mcecError, SAMPLES.contextosResult, SAMPLES.dwOk));
    for (const to of ['mcec', 'dw', 'contextos'] as const) {
      const r = await runVerb(convertVerb, ['--to', to, f], { cwd: dir });
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(4);
      for (const line of lines) {
        const doc: unknown = JSON.parse(line);
        expect(oracleValidate(to, doc).valid, line).toBe(true);
      }
      // Every stderr line is a loss line.
      for (const line of r.stderr.split('\n').filter(Boolean)) expect(line).toMatch(LOSS_LINE);
    }
  });

  it('reports each loss on stderr as doc N: pointer code: reason', async () => {
    const r = await runVerb(convertVerb, ['--to', 'contextos', '-'], { stdin: ndjson(SAMPLES.mcecOk, SAMPLES.mcecOk) });
    expect(r.code).toBe(0);
    const losses = r.stderr.trimEnd().split('\n');
    expect(losses.length).toBeGreaterThan(0);
    for (const l of losses) expect(l).toMatch(LOSS_LINE);
    expect(losses.some((l) => l.startsWith('doc 1: /'))).toBe(true);
    expect(losses.some((l) => l.startsWith('doc 2: /'))).toBe(true);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(2);
  });

  it('with --strict writes nothing for a lossy document and exits 1', async () => {
    const r = await runVerb(convertVerb, ['--to', 'contextos', '--strict', '-'], {
      stdin: ndjson(SAMPLES.mcecOk, SAMPLES.contextosResult),
    });
    expect(r.code).toBe(1);
    // The ContextOS result converts to ContextOS without loss; the MCEC one cannot.
    const out = r.stdout.trimEnd().split('\n');
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!)).toEqual(SAMPLES.contextosResult);
    expect(r.stderr).toMatch(/^doc 1: not converted: lossy and --strict$/m);
    expect(r.stderr).not.toMatch(/^doc 2:/m);
  });

  it('is lossless and exits 0 with --strict when nothing is lost', async () => {
    const r = await runVerb(convertVerb, ['--to', 'dw', '--strict', '-'], { stdin: ndjson(SAMPLES.dwOk) });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(SAMPLES.dwOk);
  });

  it('reports invalid and non-JSON documents, converts the rest, and exits 1', async () => {
    const r = await runVerb(convertVerb, ['--to', 'dw', '-'], {
      stdin: ndjson(SAMPLES.mcecOk, '{oops', SAMPLES.dwBadStatus, { hello: 1 }, SAMPLES.contextosCall, SAMPLES.mcecError),
    });
    expect(r.code).toBe(1);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/^doc 2 \(line 2\): invalid: \(document\) invalid-json /m);
    expect(r.stderr).toMatch(/^doc 3 \(line 3\): invalid \(dw\): \/status enum /m);
    expect(r.stderr).toMatch(/^doc 4 \(line 4\): invalid \(unknown\): \(document\) unknown-contract /m);
    expect(r.stderr).toMatch(/^doc 5 \(line 5\): invalid \(contextos-call\): /m);
  });

  it('writes one pretty-printed document for one document in', async () => {
    const f = file('one.json', JSON.stringify(SAMPLES.mcecError, null, 2));
    const r = await runVerb(convertVerb, ['--to', 'dw', '--from', 'mcec', f], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\{\n {2}"schema": "durable-workflow\.v2\.mcp-tool-result",\n/);
    const doc = JSON.parse(r.stdout) as { status: string; error: { code: string } };
    expect(doc.status).toBe('error');
    expect(doc.error.code).toBe('wait-condition-timeout');
    expect(oracleValidate('dw', doc).valid).toBe(true);
  });

  it('honours --preview-limit for Durable Workflow previews', async () => {
    const big = { ok: true, result: { text: 'é'.repeat(100) } };
    const r = await runVerb(convertVerb, ['--to', 'dw', '--preview-limit', '15', '-'], { stdin: ndjson(big) });
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(doc.payload_preview_limit_bytes).toBe(15);
    expect(doc.payload_preview_truncated).toBe(true);
    // '{"text":"' is 9 bytes, then three 2-byte 'é' fit in the 15.
    expect(doc.payload_preview).toBe('{"text":"ééé');
  });

  it('rejects usage errors and unreadable inputs with exit 2', async () => {
    const cases = [
      ['x.json'],
      ['--to', 'yaml', 'x.json'],
      ['--to', 'dw', '--from', 'contextos-call', 'x.json'],
      ['--to', 'dw', '--preview-limit', '-1', 'x.json'],
      ['--to', 'dw', '--preview-limit', '1.5', 'x.json'],
      ['--to', 'dw', 'a.json', 'b.json'],
      ['--to', 'dw'],
      ['--to', 'dw', '--nope', 'x.json'],
    ];
    for (const args of cases) {
      const r = await runVerb(convertVerb, args, { cwd: dir });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/^tool-envelope convert: /);
    }
    const missing = await runVerb(convertVerb, ['--to', 'dw', 'missing.json'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read missing\.json: .*ENOENT/);
  });

  it('has help with examples and exit codes', () => {
    expect(convertVerb.help).toMatch(/Examples:/);
    expect(convertVerb.help).toMatch(/Exit codes: 0 /);
  });
});
