// The CLI on the contracts' later revisions: `--dialect mcec@2026-07|dw@14` for validate,
// `--to/--from` for convert, and `schema` printing the vendored revision files.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REVISION_FILES, oracleValidate, repoRoot } from '../../test/oracle.js';
import * as convertVerb from './convert.js';
import * as schemaVerb from './schema.js';
import * as validateVerb from './validate.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-dialects-'));
const OCR = { ok: false, error: { code: 'blank-page', category: 'ocr-blank', detail: 'The page image is blank.' } };
const DW14 = {
  schema: 'durable-workflow.v2.mcp-tool-result',
  version: 1,
  status: 'ok',
  next_actions: [{ code: 'retry', label: 'Retry' }],
  mutation: { schema: 'durable-workflow.v2.safe-mutation', version: 1, tool: 'retry_activity', operation: 'retry', safe: true, applied: false },
};
const BAD_DW14 = { ...DW14, mutation: { schema: 'durable-workflow.v2.safe-mutation', tool: 'x' } };
writeFileSync(path.join(dir, 'docs.ndjson'), [OCR, DW14, BAD_DW14].map((d) => JSON.stringify(d)).join('\n') + '\n');

describe('validate --dialect with the revisions', () => {
  it('auto names the revision it detected; an explicit revision checks against its schema', async () => {
    const auto = await runVerb(validateVerb, ['--format', 'json', 'docs.ndjson'], { cwd: dir });
    const verdicts = auto.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { valid: boolean; contract: string });
    expect(verdicts.map((v) => [v.contract, v.valid])).toEqual([
      ['mcec@2026-07', true],
      ['dw@14', true],
      ['dw', true],
    ]);
    expect(auto.code).toBe(0);
    const strict = await runVerb(validateVerb, ['--dialect', 'dw@14', '--format', 'json', 'docs.ndjson'], { cwd: dir });
    expect(strict.code).toBe(1);
    const v = strict.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { valid: boolean; issues: { path: string }[] });
    expect(v.map((x) => x.valid)).toEqual([false, true, false]);
    expect(v[2]!.issues.map((i) => i.path)).toContain('/mutation/version');
    const founding = await runVerb(validateVerb, ['--dialect', 'mcec', 'docs.ndjson'], { cwd: dir });
    expect(founding.code).toBe(1);
  });
});

describe('convert between revisions', () => {
  it('--to mcec reports what an ocr-blank error became; --to mcec@2026-07 keeps it', async () => {
    writeFileSync(path.join(dir, 'ocr.json'), JSON.stringify(OCR));
    const down = await runVerb(convertVerb, ['--to', 'mcec', 'ocr.json'], { cwd: dir });
    expect(down.code).toBe(0);
    const doc = JSON.parse(down.stdout) as { error: { category: string } };
    expect(doc.error.category).toBe('capture-blank');
    expect(oracleValidate('mcec', doc).valid).toBe(true);
    expect(down.stderr).toMatch(/^doc 1: \/error\/category category-mapped: .*ocr-blank.*capture-blank/m);
    const same = await runVerb(convertVerb, ['--from', 'mcec@2026-07', '--to', 'mcec@2026-07', 'ocr.json'], { cwd: dir });
    expect(JSON.parse(same.stdout)).toEqual(OCR);
    expect(same.stderr).toBe('');
    const strict = await runVerb(convertVerb, ['--to', 'mcec', '--strict', 'ocr.json'], { cwd: dir });
    expect(strict.code).toBe(1);
  });

  it('--to dw@14 from DW 14 is the identity; --to contextos carries the objects in metadata', async () => {
    writeFileSync(path.join(dir, 'dw14.json'), JSON.stringify(DW14));
    const same = await runVerb(convertVerb, ['--to', 'dw@14', 'dw14.json'], { cwd: dir });
    expect(JSON.parse(same.stdout)).toEqual(DW14);
    const ctx = await runVerb(convertVerb, ['--to', 'contextos', 'dw14.json'], { cwd: dir });
    const out = JSON.parse(ctx.stdout) as { metadata: Record<string, unknown> };
    expect(out.metadata.next_actions).toEqual(DW14.next_actions);
    expect(out.metadata.mutation).toEqual(DW14.mutation);
    expect(oracleValidate('contextos-result', out).valid).toBe(true);
  });
});

describe('schema with the revisions', () => {
  it('prints the vendored revision files', async () => {
    for (const [name, file] of Object.entries(REVISION_FILES)) {
      const r = await runVerb(schemaVerb, [name]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(JSON.parse(readFileSync(path.join(repoRoot, 'schemas', 'revisions', file), 'utf8')));
    }
  });
});
