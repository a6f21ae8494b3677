import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTRACT_FILES, VENDORED_SHA256, allVendoredFiles, oracleValidate, publishedDir, vendoredDir, vendoredFiles } from './oracle.js';

const sha256 = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('conformance oracle', () => {
  it('every vendored file under schemas/ is pinned by its SHA-256, and matches its pin', () => {
    const files = allVendoredFiles();
    expect(files).toEqual(Object.keys(VENDORED_SHA256).sort());
    for (const file of Object.values(CONTRACT_FILES)) expect(files).toContain(file);
    for (const file of files) expect(sha256(path.join(vendoredDir, file)), file).toBe(VENDORED_SHA256[file]);
  });

  // The published contracts are not a package to install: a clone without them beside it (the README
  // test's, a developer's) skips this one comparison, saying so; the SHA-256 pins above still hold.
  const absent = publishedDir === undefined ? ' (not run: no published contracts beside the clone; TOOL_ENVELOPE_CONTRACTS_DIR names them)' : '';
  it.skipIf(publishedDir === undefined)(`the vendored copies are byte-identical to the published contracts beside the clone${absent}`, () => {
    for (const file of vendoredFiles()) {
      const ours = readFileSync(path.join(vendoredDir, file));
      const theirs = readFileSync(path.join(publishedDir!, file));
      expect(ours.equals(theirs), file).toBe(true);
    }
  });

  it('accepts and rejects by the published schemas', () => {
    expect(oracleValidate('mcec', { ok: true }).valid).toBe(true);
    expect(oracleValidate('mcec', { ok: false }).valid).toBe(false);
    expect(oracleValidate('dw', { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'ok' }).valid).toBe(true);
    const bad = oracleValidate('dw', { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'error' });
    expect(bad.valid).toBe(false);
    expect(bad.errors.length).toBeGreaterThan(0);
    expect(oracleValidate('contextos-result', { envelope_version: 'contextos.tool_result.v1' }).valid).toBe(false);
    expect(oracleValidate('contextos', { envelope_version: 'contextos.tool_call.v1' }).valid).toBe(false);
  });
});
