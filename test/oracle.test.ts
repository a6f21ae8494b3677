import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTRACT_FILES, contractsDir, oracleValidate, repoRoot } from './oracle.js';

describe('conformance oracle', () => {
  it('the shipped schemas/ are byte-identical to the published contracts', () => {
    const shipped = readdirSync(path.join(repoRoot, 'schemas')).filter((f) => f.endsWith('.json')).sort();
    expect(shipped).toEqual(Object.values(CONTRACT_FILES).sort());
    for (const file of shipped) {
      const ours = readFileSync(path.join(repoRoot, 'schemas', file));
      const theirs = readFileSync(path.join(contractsDir, file));
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
