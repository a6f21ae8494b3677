import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONTRACT_FILES, oracleValidate, repoRoot, vendoredDir } from '../../test/oracle.js';
import * as schemaVerb from './schema.js';
import { SAMPLES } from './test-support/envelopes.js';
import { runVerb } from './test-support/run-verb.js';

function published(file: string): unknown {
  return JSON.parse(readFileSync(path.join(vendoredDir, file), 'utf8'));
}

async function printed(name: string): Promise<Record<string, unknown>> {
  const r = await runVerb(schemaVerb, [name]);
  expect(r.code).toBe(0);
  expect(r.stdout.startsWith('{\n  "$schema"')).toBe(true);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

const smallJson = fc.jsonValue({ maxDepth: 2 });
const REMOVE = Symbol('remove');
/** Each field kept (most often), removed, or given another value; sometimes a field of the other half added. */
const mutate = (base: Record<string, unknown>, extra: Record<string, fc.Arbitrary<unknown>>) => {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, v] of Object.entries(base)) {
    const alt = extra[k];
    fields[k] = fc.oneof(
      { weight: 60, arbitrary: fc.constant(v) },
      ...(alt ? [{ weight: 20, arbitrary: alt }] : []),
      { weight: 1, arbitrary: fc.constant(REMOVE) },
      { weight: 1, arbitrary: smallJson },
    );
  }
  for (const [k, arb] of Object.entries(extra)) {
    if (k in base) continue;
    fields[k] = fc.oneof({ weight: 6, arbitrary: fc.constant(REMOVE) }, { weight: 3, arbitrary: arb }, { weight: 1, arbitrary: smallJson });
  }
  return fc.record(fields).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== REMOVE)));
};
const validPrincipal = fc.record(
  { kind: fc.constantFrom('user', 'service', 'agent', 'automation'), id: fc.string(), tenant_id: fc.string(), display: fc.string() },
  { requiredKeys: ['kind', 'id'] },
);
const oddPrincipal = fc.record(
  { kind: fc.constantFrom('user', 'robot'), id: fc.oneof(fc.string(), fc.integer()), display: fc.constant(null), extra: fc.string() },
  { requiredKeys: [] },
);
const principal = fc.oneof({ weight: 9, arbitrary: validPrincipal }, oddPrincipal);
/** A key of the other half: rarely present, and then never allowed. */
const foreign = (v: unknown) => fc.oneof({ weight: 4, arbitrary: fc.constant(REMOVE) }, fc.constant(v));
const mode = fc.constantFrom('read_only', 'local_write', 'network', 'delegated', 'destructive', 'admin');
const nullableString = fc.option(fc.string());
const NEAR = {
  'contextos-call': mutate(SAMPLES.contextosCall, {
    principal_chain: fc.array(principal, { maxLength: 3 }),
    approval_mode_effective: mode,
    session_id: fc.string(),
    policy_decision_id: nullableString,
    auth_ref: nullableString,
    metadata: fc.dictionary(fc.string(), smallJson),
    status: foreign('ok'),
  }),
  'contextos-result': mutate(SAMPLES.contextosResult, {
    status: fc.constantFrom('ok', 'error', 'paused', 'completed', 'failed', 'rejected', 'blocked', 'done'),
    latency_ms: fc.oneof(fc.integer({ min: -2 }), fc.double()),
    session_id: fc.string(),
    error: nullableString,
    policy_decision_id: nullableString,
    citations: fc.array(fc.oneof(fc.dictionary(fc.string(), smallJson), fc.string()), { maxLength: 2 }),
    metadata: fc.dictionary(fc.string(), smallJson),
    args: foreign({}),
  }),
} as const;

describe('tool-envelope schema', () => {
  it('prints the published contract schemas unchanged', async () => {
    expect(await printed('mcec')).toEqual(published(CONTRACT_FILES.mcec));
    expect(await printed('dw')).toEqual(published(CONTRACT_FILES.dw));
    expect(await printed('contextos')).toEqual(published(CONTRACT_FILES.contextos));
    expect(await printed('contextos-principal')).toEqual(published(CONTRACT_FILES.principal));
  });

  it('prints standalone ContextOS halves that compile alone and agree with the published schema', async () => {
    for (const name of ['contextos-call', 'contextos-result'] as const) {
      const schema = await printed(name);
      expect(schema.$id).not.toMatch(/#/);
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      // A fresh Ajv with nothing else added: every $ref must resolve inside the printed schema.
      const validate = new Ajv2020.default({ strict: false }).compile(schema);
      const sample = name === 'contextos-call' ? SAMPLES.contextosCall : SAMPLES.contextosResult;
      expect(validate(sample)).toBe(true);
      expect(oracleValidate(name, sample).valid).toBe(true);
      let valid = 0;
      let invalid = 0;
      fc.assert(
        fc.property(NEAR[name], (doc) => {
          const mine = validate(doc);
          expect(mine).toBe(oracleValidate(name, doc).valid);
          if (mine) valid++;
          else invalid++;
        }),
        { numRuns: 1500 },
      );
      // The comparison must have covered both verdicts, not only rejections.
      expect(valid, `${name}: ${valid} valid, ${invalid} invalid`).toBeGreaterThan(50);
      expect(invalid).toBeGreaterThan(50);
    }
  });

  it('rejects a missing, unknown or extra name with exit 2', async () => {
    for (const args of [[], ['nope'], ['mcec', 'dw'], ['--pretty', 'mcec']]) {
      const r = await runVerb(schemaVerb, args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^tool-envelope schema: /);
    }
  });
});

describe('the built CLI, end to end', () => {
  // `npm test` builds first; while iterating without a fresh build, run the sources through tsx.
  const built = path.join(repoRoot, 'dist/src/cli/main.js');
  const fresh =
    existsSync(built) &&
    ['validate', 'convert', 'schema', 'input'].every((m) => {
      const js = path.join(repoRoot, `dist/src/cli/${m}.js`);
      return existsSync(js) && statSync(js).mtimeMs >= statSync(path.join(repoRoot, `src/cli/${m}.ts`)).mtimeMs;
    });
  const cli = (args: string[], input?: string) => {
    const cmd = fresh ? [built] : [path.join(repoRoot, 'node_modules/tsx/dist/cli.mjs'), path.join(repoRoot, 'src/cli/main.ts')];
    return spawnSync(process.execPath, [...cmd, ...args], { input, encoding: 'utf8', cwd: repoRoot, timeout: 60_000 });
  };

  it('validates, converts and prints schemas as a child process, with the documented exit codes', () => {
    const input = [JSON.stringify(SAMPLES.mcecOk), 'not json', JSON.stringify(SAMPLES.contextosCall)].join('\n') + '\n';
    const v = cli(['validate', '-'], input);
    expect(v.stderr).toBe('');
    const lines = v.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('<stdin>:1: valid (mcec)');
    expect(lines[1]).toMatch(/^<stdin>:2: invalid \(unknown\): \(document\) invalid-json /);
    expect(lines[2]).toBe('<stdin>:3: valid (contextos-call)');
    expect(v.status).toBe(1);

    const c = cli(['convert', '--to', 'dw', '-'], JSON.stringify(SAMPLES.mcecError) + '\n');
    expect(c.status, c.stderr).toBe(0);
    expect(oracleValidate('dw', JSON.parse(c.stdout)).valid).toBe(true);

    const s = cli(['schema', 'contextos-result']);
    expect(s.status).toBe(0);
    expect((JSON.parse(s.stdout) as { $id: string }).$id).toBe(schemaVerb.CONTEXTOS_HALF_IDS.result);

    const usage = cli(['validate', '--dialect', 'nope', '-'], '');
    expect(usage.status).toBe(2);
    const h = cli(['convert', '--help']);
    expect(h.status).toBe(0);
    expect(h.stdout).toMatch(/^Usage: tool-envelope convert /);
  });
});
