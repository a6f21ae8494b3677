// The contracts' later revisions as dialects (docs/contracts.md, "Revisions"): the vendored files
// pinned, the conformance properties as for the founding contracts (oracle compiled from
// schemas/revisions/), detection, and the revision tables row by row.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { conformanceSuite } from '../../../test/conformance.js';
import { dw14Doc, mcec202607Doc, toolOutcome } from '../../../test/arbitraries.js';
import { REVISION_FILES, oracleValidate, publishedDir, repoRoot } from '../../../test/oracle.js';
import { CONTRACT_IDS, type ContractId, type Loss, contractFamily, contracts, convert, detectContract, validateEnvelope } from './registry.js';
import { checkDw14, decodeDw14, encodeDw14, validateDw14 } from './dw-14.js';
import { checkMcec202607, decodeMcec202607, encodeMcec202607, validateMcec202607 } from './mcec-2026-07.js';
import { decodeMcec } from './mcec.js';
import type { JsonValue } from '../json.js';
import { failure, toolError, type ToolOutcome } from '../model.js';
import { FOUNDING_MCEC_CATEGORIES, ERROR_CATEGORIES } from '../taxonomy.js';

const PINNED: Record<keyof typeof REVISION_FILES, string> = {
  'mcec@2026-07': '957b987ac17b8529b45ee175df9c4149bcdbbf7ca72dfbb65e97efac91ccf1ee',
  'dw@14': '7968dafa939e4ceec0def9252ce4acf262eab9fbd71d1e13befd29c9061ca46e',
};

describe('the vendored revision files (schemas/revisions/)', () => {
  for (const [dialect, file] of Object.entries(REVISION_FILES) as [keyof typeof REVISION_FILES, string][]) {
    it(`${file}: SHA-256 pinned, equal to ../shared/contracts/revisions when present, and the schema the dialect exports`, () => {
      const bytes = readFileSync(path.join(repoRoot, 'schemas', 'revisions', file));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(PINNED[dialect]);
      // Byte-identity with the published copy is checked for every vendored file by test/oracle.test.ts.
      if (publishedDir !== undefined && existsSync(path.join(publishedDir, 'revisions', file))) {
        expect(readFileSync(path.join(publishedDir, 'revisions', file)).equals(bytes)).toBe(true);
      }
      expect(contracts[dialect].schema).toEqual(JSON.parse(bytes.toString('utf8')));
    });
  }
});

conformanceSuite({
  name: 'MCEC 2026-07',
  oracle: 'mcec@2026-07',
  docs: mcec202607Doc,
  validate: validateMcec202607,
  check: checkMcec202607,
  decode: decodeMcec202607,
  encode: (o) => encodeMcec202607(o),
  canonical: toolOutcome,
});

conformanceSuite({
  name: 'Durable Workflow 14',
  oracle: 'dw@14',
  docs: dw14Doc,
  validate: validateDw14,
  check: checkDw14,
  decode: decodeDw14,
  encode: (o) => encodeDw14(o),
  canonical: toolOutcome,
  minInvalidShare: 0.2,
});

describe('the one taxonomy', () => {
  it('has the twelve MCEC 2026-07 categories, the founding ten among them', () => {
    const schemaEnum = (contracts['mcec@2026-07'].schema as { $defs?: unknown }) && JSON.stringify(contracts['mcec@2026-07'].schema);
    for (const c of ERROR_CATEGORIES) expect(schemaEnum).toContain(`"${c}"`);
    expect(ERROR_CATEGORIES).toHaveLength(12);
    expect(FOUNDING_MCEC_CATEGORIES).toEqual(ERROR_CATEGORIES.filter((c) => !c.startsWith('ocr-')));
    for (const c of FOUNDING_MCEC_CATEGORIES) expect(JSON.stringify(contracts.mcec.schema)).toContain(`"${c}"`);
    expect(JSON.stringify(contracts.mcec.schema)).not.toContain('"ocr-blank"');
  });
});

describe('conversion between revisions, properties', () => {
  it('a revision document converted to its founding contract keeps everything but what the founding one lacks, exactly reported', () => {
    fc.assert(
      fc.property(mcec202607Doc, (doc) => {
        const r = convert(doc, { from: 'mcec@2026-07', to: 'mcec' });
        expect(oracleValidate('mcec', r.document).valid).toBe(true);
        const category = (doc.error as { category?: string } | undefined)?.category;
        const mapped = category === 'ocr-blank' || category === 'ocr-no-text';
        expect(r.losses.map((l) => `${l.path} ${l.code}`)).toEqual(mapped ? ['/error/category category-mapped'] : []);
        if (!mapped) expect(r.document).toStrictEqual(doc);
        else expect(r.document).toStrictEqual({ ...doc, error: { ...(doc.error as object), category: 'capture-blank' } });
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(dw14Doc, (doc) => {
        const r = convert(doc, { from: 'dw@14', to: 'dw' });
        expect(r.losses).toEqual([]);
        expect(r.document).toStrictEqual(doc);
        expect(oracleValidate('dw', r.document).valid).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('every canonical outcome encodes valid under each revision, and a revision loses nothing its founding contract keeps', () => {
    fc.assert(
      fc.property(toolOutcome, (o) => {
        for (const [rev, founding] of [
          ['mcec@2026-07', 'mcec'],
          ['dw@14', 'dw'],
        ] as const) {
          const revLosses: Loss[] = [];
          const foundLosses: Loss[] = [];
          expect(oracleValidate(rev, contracts[rev].encode(o, { losses: revLosses })).errors).toEqual([]);
          contracts[founding].encode(o, { losses: foundLosses });
          const kept = new Set(foundLosses.map((l) => `${l.path} ${l.code}`));
          // The revision reports exactly the founding losses, less the categories it has, plus the 14 objects it cannot hold.
          for (const l of revLosses) {
            if (
              rev === 'dw@14' &&
              l.code === 'not-representable' &&
              /^\/(rootCause|remediationPlan|nextActions|safeMutation|extensions\/(root_cause|remediation|next_actions|mutation))$/.test(l.path)
            )
              continue;
            expect(kept.has(`${l.path} ${l.code}`), `${rev} ${l.path} ${l.code}`).toBe(true);
          }
          for (const l of foundLosses) {
            if (rev === 'mcec@2026-07' && l.code === 'category-mapped') continue;
            expect(
              revLosses.some((r) => r.path === l.path && r.code === l.code),
              `${founding} ${l.path}`,
            ).toBe(true);
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});

const rootCause = {
  schema: 'durable-workflow.v2.agent-root-cause',
  version: 1,
  category: 'activity_failure',
  reason: 'activity_timed_out',
  source: { kind: 'activity', id: 'a1' },
};
const dwBase = { schema: 'durable-workflow.v2.mcp-tool-result', version: 1 };

describe('detection names the revision', () => {
  it('auto answers a revision exactly when the document needs it', () => {
    expect(detectContract({ ok: false, error: { code: 'x', category: 'ocr-blank', detail: 'd' } })).toBe('mcec@2026-07');
    expect(detectContract({ ok: false, error: { code: 'x', category: 'capture-blank', detail: 'd' } })).toBe('mcec');
    expect(detectContract({ ...dwBase, status: 'error', error: { code: 'E' }, root_cause: rootCause })).toBe('dw@14');
    expect(detectContract({ ...dwBase, status: 'ok', root_cause: 'free text' })).toBe('dw');
    expect(detectContract({ ...dwBase, status: 'ok' })).toBe('dw');
    expect(validateEnvelope({ ok: false, error: { code: 'x', category: 'ocr-no-text', detail: 'd' } }, 'auto')).toEqual({
      valid: true,
      contract: 'mcec@2026-07',
      issues: [],
    });
    const bad = validateEnvelope({ ...dwBase, status: 'ok', mutation: { schema: 'durable-workflow.v2.safe-mutation' } }, 'dw@14');
    expect(bad.valid).toBe(false);
    expect(bad.issues.map((i) => i.path)).toContain('/mutation/version');
    expect(validateEnvelope({ ...dwBase, status: 'ok', mutation: { schema: 'x' } }, 'dw').valid).toBe(true);
  });

  it('each revision belongs to its founding family', () => {
    expect(CONTRACT_IDS.map((id) => contractFamily(id))).toEqual(['mcec', 'dw', 'contextos', 'mcec', 'dw']);
  });

  it('decoding dw@14 gives the canonical error what the root cause and the remediation say and the error does not', () => {
    const remediation = {
      schema: 'durable-workflow.v2.agent-remediation',
      version: 1,
      classification: 'retry',
      summary: 'Retry the activity.',
      automatic_repair: { tool: 'retry_activity', allowed: true },
    };
    const doc = { ...dwBase, status: 'error', error: { code: 'E1', message: 'failed' }, root_cause: { ...rootCause, retryable: true }, remediation };
    const outcome = decodeDw14(doc);
    expect(outcome.error).toMatchObject({
      category: 'timeout',
      categoryInferred: true,
      reason: 'activity_timed_out',
      retryable: true,
      remediation: 'Retry the activity.',
      fromRootCause: ['reason', 'retryable', 'remediation'],
    });
    expect(outcome.rootCause).toEqual({ ...rootCause, retryable: true });
    expect(outcome.remediationPlan).toEqual(remediation);
    // The source round-trips: what came from the root cause is not written into the error.
    expect(encodeDw14(outcome)).toStrictEqual(doc);
    expect(convert(doc, { from: 'dw@14', to: 'dw' }).document).toStrictEqual(doc);
    // What the error states wins.
    const stated = decodeDw14({ ...doc, error: { code: 'E1', reason: 'own', retryable: false } }).error;
    expect(stated).toMatchObject({ reason: 'own', retryable: false, fromRootCause: ['remediation'] });
    // ContextOS carries the derived fields as the error's own; MCEC reports what it cannot hold.
    const ctx = convert(doc, { from: 'dw@14', to: 'contextos' }).document as unknown as { metadata: { error: Record<string, unknown> } };
    expect(ctx.metadata.error).toMatchObject({ reason: 'activity_timed_out', retryable: true, remediation: 'Retry the activity.' });
    const paths = convert(doc, { from: 'dw@14', to: 'mcec' }).losses.map((l) => l.path);
    expect(paths).toEqual(expect.arrayContaining(['/error/reason', '/error/remediation', '/rootCause', '/remediationPlan']));
  });
});

// docs/contracts.md, the revision tables, row by row.
const doc = readFileSync(path.join(repoRoot, 'docs', 'contracts.md'), 'utf8');
function table(name: string): string[][] {
  const lines = doc
    .slice(doc.indexOf(`<!-- table: ${name} -->`))
    .split('\n')
    .slice(3);
  const rows: string[][] = [];
  for (const line of lines) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  return rows;
}
const codeOf = (cell: string): string => /`([^`]*)`/.exec(cell)![1]!;

describe('docs/contracts.md: revisions, row by row', () => {
  it('the revisions table: each dialect, its family and its $id', () => {
    const rows = table('revisions');
    expect(rows.map((r) => codeOf(r[0]!))).toEqual(['mcec@2026-07', 'dw@14']);
    for (const [d, family, id] of rows) {
      const dialect = codeOf(d!) as ContractId;
      expect(contractFamily(dialect)).toBe(codeOf(family!));
      expect((contracts[dialect].schema as { $id: string }).$id).toBe(codeOf(id!));
    }
  });

  // One document per row of the revision-conversions table, in its order.
  const sources: [ContractId, unknown][] = [
    ['mcec@2026-07', { ok: false, error: { code: 'blank-page', category: 'ocr-blank', detail: 'The page image is blank.' } }],
    ['mcec@2026-07', { ok: false, error: { code: 'no-text', category: 'ocr-no-text', detail: 'No text found.' } }],
    ['mcec', { ok: false, error: { code: 'x', category: 'timeout', detail: 'Waited.' } }],
    ['dw@14', { ...dwBase, status: 'error', error: { code: 'E' }, root_cause: rootCause }],
    ['dw', { ...dwBase, status: 'ok', mutation: { schema: 'durable-workflow.v2.safe-mutation', tool: 'x' } }],
    ['dw@14', { ...dwBase, status: 'ok', next_actions: [{ code: 'retry', label: 'Retry' }] }],
    [
      'dw@14',
      {
        ...dwBase,
        status: 'error',
        error: null,
        remediation: {
          schema: 'durable-workflow.v2.agent-remediation',
          version: 1,
          classification: 'retry',
          summary: 's',
          automatic_repair: { tool: 't', allowed: false },
        },
      },
    ],
  ];
  const rows = table('revision-conversions');
  it('has one document per row', () => expect(rows).toHaveLength(sources.length));
  rows.forEach(([, target, , loss], i) => {
    it(`row ${i + 1}: ${rows[i]![0]} -> ${target}`, () => {
      const [from, source] = sources[i]!;
      const to = codeOf(target!) as ContractId;
      const r = convert(source, { from, to });
      expect(oracleValidate(to === 'contextos' ? 'contextos-result' : to, r.document).errors).toEqual([]);
      const got = r.losses.filter((l) => !['missing-required-id', 'missing-latency'].includes(l.code)).map((l) => `${l.code} at \`${l.path}\``);
      expect(got).toEqual(loss === '—' ? [] : [loss!.replace(/^`([^`]*)` at/, '$1 at')]);
      if (i === 0) expect(r.document).toEqual({ ok: false, error: { code: 'blank-page', category: 'capture-blank', detail: 'The page image is blank.' } });
      if (i === 3) expect(r.document).toStrictEqual(source);
      if (i === 6) expect((r.document as { metadata: Record<string, unknown> }).metadata.remediation).toEqual((source as Record<string, unknown>).remediation);
    });
  });

  it('an ocr-blank error without a code keeps the category name as its code when written as founding MCEC', () => {
    const losses: Loss[] = [];
    const o: ToolOutcome = failure({ ...toolError('ocr-blank', 'x', 'Blank.'), code: undefined });
    const written = contracts.mcec.encode(o, { losses });
    expect(written.error).toMatchObject({ code: 'ocr-blank', category: 'capture-blank' });
    expect(decodeMcec(written).error?.category).toBe('capture-blank');
    expect(losses).toEqual([{ path: '/error/category', code: 'category-mapped', reason: expect.stringContaining('capture-blank') }]);
  });
});

describe('docs/contracts.md: safe mutation → ContextOS mutations, row by row', () => {
  const rows = table('safe-mutation');
  it('has the six documented cases', () => expect(rows).toHaveLength(6));
  rows.forEach(([value, target, reference, mcec], i) => {
    it(`row ${i + 1}: ${codeOf(target!)}`, () => {
      const mutation = JSON.parse(codeOf(value!)) as JsonValue;
      const source = { ...dwBase, status: 'ok', mutation };
      expect(oracleValidate('dw@14', source).errors).toEqual([]);
      const r = convert(source, { from: 'dw@14', to: 'contextos' });
      expect(oracleValidate('contextos-result', r.document).errors).toEqual([]);
      expect(r.losses.filter((l) => !['missing-required-id', 'missing-latency'].includes(l.code))).toEqual([]);
      const written = r.document as { mutations: string[]; metadata?: Record<string, unknown> };
      if (codeOf(target!) === '/mutations/-') {
        expect(written.mutations).toEqual([codeOf(reference!)]);
        expect(written.metadata).toBeUndefined();
      } else {
        expect(reference).toBe('—');
        expect(written.mutations).toEqual([]);
        expect(written.metadata).toStrictEqual({ mutation });
      }
      const back = convert(r.document, { from: 'contextos', to: 'dw@14' });
      expect(oracleValidate('dw@14', back.document).errors).toEqual([]);
      expect((back.document as Record<string, unknown>).mutation).toStrictEqual(mutation);
      const losses = convert(source, { from: 'dw@14', to: 'mcec' }).losses.filter((l) => l.path === '/safeMutation');
      expect(losses.map((l) => `${l.code} at \`${l.path}\``)).toEqual(mcec === '—' ? [] : [mcec!.replace(/^loss `([^`]*)` at/, '$1 at')]);
    });
  });
});
