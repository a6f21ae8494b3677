/**
 * Row-by-row check of the mapping tables in docs/contracts.md: the test reads
 * the tables from the document, so the documentation and the code cannot drift.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toolOutcome } from '../../../test/arbitraries.js';
import { repoRoot } from '../../../test/oracle.js';
import { CONTRACT_IDS, type ContractId, type Loss, contracts } from './registry.js';
import { decodeContextosResult, encodeContextosResult } from './contextos.js';
import { DW_REASONS, decodeDw, encodeDw, inferDwCategory } from './dw.js';
import type { JsonObject, JsonValue } from '../json.js';
import { MCEC_SYNTHESIZED_ERRORS, encodeMcec } from './mcec.js';
import type { ToolOutcome } from '../model.js';
import { PLAIN_FAILURE_RULES_FORMAT, classifyPlainFailure, compileFailureRules, shippedFailureRules } from '../plain-failure.js';
import { type ErrorCategory, type OutcomeStatus, defaultRemediation, defaultRetryable } from '../taxonomy.js';

const doc = readFileSync(path.join(repoRoot, 'docs', 'contracts.md'), 'utf8');

/** The rows of the table after `<!-- table: name -->`, as arrays of cell texts. */
function table(name: string): string[][] {
  const start = doc.indexOf(`<!-- table: ${name} -->`);
  if (start < 0) throw new Error(`docs/contracts.md has no table ${name}`);
  const lines = doc.slice(start).split('\n').slice(1);
  const rows: string[][] = [];
  for (const line of lines.slice(2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  expect(rows.length).toBeGreaterThan(0);
  return rows;
}

/** The text inside the first backticks of a cell. */
function code(cell: string): string {
  const m = /`([^`]*)`/.exec(cell);
  if (!m) throw new Error(`no code in cell ${cell}`);
  return m[1]!;
}

function tokens(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function get(value: unknown, pointer: string): unknown {
  let v = value;
  for (const t of tokens(pointer)) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, t)) return undefined;
    v = (v as Record<string, unknown>)[t];
  }
  return v;
}

function set(target: Record<string, unknown>, pointer: string, value: unknown): void {
  const ts = tokens(pointer);
  let o = target;
  for (const t of ts.slice(0, -1)) {
    o[t] ??= {};
    o = o[t] as Record<string, unknown>;
  }
  o[ts[ts.length - 1]!] = value;
}

/** A sample value for each canonical field of the field table (a row without one fails). */
const SAMPLES: Record<string, JsonValue> = {
  '/result': { rows: [1, 2] },
  '/warnings': [{ code: 'tree-truncated', detail: 'first 500 nodes' }],
  '/sessionId': 's-1',
  '/toolCallId': 'call-1',
  '/runId': 'run-1',
  '/traceId': 'trace-1',
  '/capabilityId': 'fs.read',
  '/policyDecisionId': 'pd-1',
  '/latencyMs': 42,
  '/artifacts': ['file:///a.png'],
  '/citations': [{ url: 'https://example.org' }],
  '/mutations': ['row:1'],
  '/riskTags': ['network'],
  '/metadata': { tenant: 'acme' },
  '/preview/text': '{"rows":[1',
  '/preview/truncated': true,
  '/preview/limitBytes': 10,
  '/content': [{ type: 'text', text: 'hello' }],
  '/schemaVersion': 2,
  '/meta': { workflow: 'w-1' },
  '/rootCause': {
    schema: 'durable-workflow.v2.agent-root-cause',
    version: 1,
    category: 'activity_failure',
    reason: 'activity_timed_out',
    source: { kind: 'activity', id: 'a-1' },
  },
  '/remediationPlan': {
    schema: 'durable-workflow.v2.agent-remediation',
    version: 1,
    classification: 'retry',
    summary: 'Retry the activity.',
    automatic_repair: { tool: 'retry_activity', allowed: true },
  },
  '/nextActions': [{ code: 'retry', label: 'Retry the activity', tool: 'retry_activity', mutation: true, allowed: true }],
  '/safeMutation': { schema: 'durable-workflow.v2.safe-mutation', version: 1, tool: 'retry_activity', operation: 'retry', safe: true, applied: false },
  '/extensions/x': { any: 'thing' },
  '/error/category': 'focus',
  '/error/code': 'wait-condition-timeout',
  '/error/detail': 'Waited 5 s for the dialog.',
  '/error/reason': 'dialog_missing',
  '/error/remediation': 'Open the dialog first.',
  '/error/retryable': false,
  '/error/retryAfterMs': 250,
  '/error/details': { field: 'path' },
  '/error/lastObservation': { tree: { nodes: 3 } },
  '/error/partialResult': { png: 'iVBOR' },
  '/error/extensions/x': 'extra',
};

const COLUMNS: readonly ContractId[] = ['mcec', 'dw', 'contextos'];

describe('docs/contracts.md: field mapping, row by row', () => {
  for (const row of table('fields')) {
    const canonical = code(row[0]!);
    describe(canonical, () => {
      COLUMNS.forEach((id, i) => {
        const cell = row[i + 1]!;
        it(`${id}: ${cell}`, () => {
          expect(Object.hasOwn(SAMPLES, canonical), `no sample for ${canonical}`).toBe(true);
          const sample = SAMPLES[canonical];
          const outcome: Record<string, unknown> = canonical.startsWith('/error/') ? { status: 'error', error: { category: 'timeout' } } : { status: 'ok' };
          set(outcome, canonical, sample);
          const losses: Loss[] = [];
          const wire = contracts[id].encode(outcome as unknown as ToolOutcome, { losses });
          expect(contracts[id].validate(wire)).toBe(true);
          if (cell.startsWith('loss')) {
            const at = / at `([^`]*)`/.exec(cell)?.[1] ?? canonical;
            const lossCode = code(cell);
            expect(losses).toContainEqual({ path: at, code: lossCode, reason: expect.any(String) });
          } else {
            const target = code(cell);
            expect(get(wire, target)).toStrictEqual(sample);
            expect(losses.filter((l) => l.path === canonical)).toEqual([]);
            expect(get(contracts[id].decode(wire), canonical)).toStrictEqual(sample);
          }
        });
      });
    });
  }
});

describe('docs/contracts.md: status, row by row', () => {
  for (const [c, mcecOk, mcecLoss, dwStatus, dwMeta, ctx] of table('status')) {
    const status = code(c!) as OutcomeStatus;
    it(status, () => {
      const losses: Loss[] = [];
      const m = encodeMcec({ status, error: { category: 'internal', code: 'x', detail: 'y' } }, { losses });
      expect(m.ok).toBe(code(mcecOk!) === 'true');
      const statusLosses = losses.filter((l) => l.path === '/status').map((l) => l.code);
      expect(statusLosses).toEqual(mcecLoss === '—' ? [] : [code(mcecLoss!)]);
      const d = encodeDw({ status });
      expect(d.status).toBe(code(dwStatus!));
      expect(d.meta?.status).toBe(dwMeta === '—' ? undefined : code(dwMeta!));
      expect(decodeDw(d).status).toBe(status);
      const x = encodeContextosResult({ status });
      expect(x.status).toBe(code(ctx!));
      expect(decodeContextosResult(x).status).toBe(status);
    });
  }
});

describe('docs/contracts.md: MCEC synthesized errors, row by row', () => {
  for (const [s, c, cat, detail] of table('synthesized')) {
    const status = code(s!) as keyof typeof MCEC_SYNTHESIZED_ERRORS;
    it(status, () => {
      const expected = { code: code(c!), category: code(cat!), detail };
      expect(MCEC_SYNTHESIZED_ERRORS[status]).toEqual(expected);
      const losses: Loss[] = [];
      expect(encodeMcec({ status }, { losses }).error).toEqual(expected);
      expect(losses).toContainEqual({ path: '/error', code: 'synthesized-error', reason: expect.any(String) });
    });
  }
  it('covers every failure status', () => {
    expect(
      table('synthesized')
        .map((r) => code(r[0]!))
        .sort(),
    ).toEqual(Object.keys(MCEC_SYNTHESIZED_ERRORS).sort());
  });
});

describe('docs/contracts.md: categories → DW defaults, row by row', () => {
  const rows = table('categories');
  for (const [c, dwCode, reason, retryable, remediation] of rows) {
    const category = code(c!) as ErrorCategory;
    it(category, () => {
      expect(DW_REASONS[category]).toBe(code(reason!));
      expect(defaultRetryable(category)).toBe(code(retryable!) === 'true');
      expect(defaultRemediation(category)).toBe(remediation);
      const error = encodeDw({ status: 'error', error: { category } }).error;
      expect(error).toStrictEqual({
        code: code(dwCode!),
        reason: code(reason!),
        remediation,
        retryable: code(retryable!) === 'true',
        category,
      });
      // Back: a DW error stating no category but this reason.
      const back = decodeDw({ schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'error', error: { reason: code(reason!) } });
      expect(back.error).toMatchObject({ category, categoryInferred: true });
      expect(inferDwCategory({ code: category })).toBe(category);
    });
  }
  it('covers all twelve categories', () => {
    expect(rows.map((r) => code(r[0]!)).sort()).toEqual(Object.keys(DW_REASONS).sort());
  });
});

describe('docs/contracts.md: category inference, row by row', () => {
  for (const [example, , cat] of table('inference')) {
    const text = code(example!);
    const category = code(cat!);
    it(`${text} → ${category}`, () => {
      expect(inferDwCategory({ code: text })).toBe(category);
      expect(inferDwCategory({ code: 'x', message: text.replace(/_/g, ' ') })).toBe(category);
      const ctx = decodeContextosResult({ ...encodeContextosResult({ status: 'failed' }), error: text });
      expect(ctx.error).toMatchObject({ category, categoryInferred: true });
    });
  }
  it('the approval statuses fall back to elevation', () => {
    for (const status of ['paused', 'rejected', 'blocked'] as const) {
      expect(inferDwCategory({ code: 'boom' }, status)).toBe('elevation');
      const ctx = decodeContextosResult({ ...encodeContextosResult({ status }), error: 'boom' });
      expect(ctx.error?.category).toBe('elevation');
    }
  });
});

describe('docs/contracts.md: ContextOS required fields, row by row', () => {
  const rows = table('contextos-required');
  const losses: Loss[] = [];
  const wire = encodeContextosResult({ status: 'ok' }, { losses }) as unknown as JsonObject;
  for (const [f, value, loss] of rows) {
    const field = code(f!);
    it(field, () => {
      expect(wire[field]).toStrictEqual(JSON.parse(code(value!)));
      const mine = losses.filter((l) => l.reason.includes(field));
      expect(mine.map((l) => l.code)).toEqual(loss === '—' ? [] : [code(loss!)]);
    });
  }
  it('reports nothing else', () => {
    expect(losses).toHaveLength(rows.filter((r) => r[2] !== '—').length);
  });
});

describe('docs/contracts.md: loss codes', () => {
  const documented = table('loss-codes').map((r) => code(r[0]!));
  const SCENARIOS: Record<string, () => Loss[]> = {
    'not-representable': () => collect('mcec', { status: 'ok', runId: 'r' }),
    'wrapped-non-object': () => collect('mcec', { status: 'ok', result: 1 }),
    'dropped-status': () => collect('mcec', { status: 'completed' }),
    'dropped-error': () => collect('mcec', { status: 'ok', error: { category: 'internal' } }),
    'synthesized-error': () => collect('mcec', { status: 'error' }),
    'missing-required-id': () => collect('contextos', { status: 'ok' }),
    'missing-latency': () => collect('contextos', { status: 'ok' }),
    'key-conflict': () => collect('dw', { status: 'ok', runId: 'r', meta: { run_id: 1 } }),
    'category-mapped': () => collect('mcec', { status: 'error', error: { category: 'ocr-no-text', code: 'x', detail: 'y' } }),
  };
  function collect(id: ContractId, outcome: ToolOutcome): Loss[] {
    const losses: Loss[] = [];
    contracts[id].encode(outcome, { losses });
    return losses;
  }
  it.each(documented)('%s is produced', (c) => {
    expect(Object.hasOwn(SCENARIOS, c), `no scenario for ${c}`).toBe(true);
    expect(SCENARIOS[c]!().map((l) => l.code)).toContain(c);
  });
  it('every code an encoder reports is documented', () => {
    expect(Object.keys(SCENARIOS).sort()).toEqual([...documented].sort());
    const seen = new Set<string>();
    for (const outcome of fc.sample(toolOutcome, 500)) {
      for (const id of CONTRACT_IDS) {
        const losses: Loss[] = [];
        contracts[id].encode(outcome, { losses });
        for (const l of losses) seen.add(l.code);
      }
    }
    for (const c of seen) expect(documented).toContain(c);
  });
});

describe('plain-failure rules (docs/contracts.md, "Plain failures")', () => {
  it('the rule-file table lists exactly the keys compileFailureRules accepts, required ones required', () => {
    const rows = table('plain-failure-rule');
    const base = { id: 'r', pattern: 'x', category: 'internal', code: 'c' };
    for (const [key, required] of rows.map((r) => [code(r[0]!), r[1]] as const)) {
      const without = { ...base } as Record<string, unknown>;
      delete without[key];
      const compile = (rule: Record<string, unknown>) => () => compileFailureRules({ format: PLAIN_FAILURE_RULES_FORMAT, rules: [rule] }, 'doc');
      if (required === 'yes') expect(compile(without), key).toThrow(/invalid plain-failure rules/);
      else expect(compile(without), key).not.toThrow();
    }
    expect(() => compileFailureRules({ format: PLAIN_FAILURE_RULES_FORMAT, rules: [{ ...base, undocumented: 1 }] }, 'doc')).toThrow(/unknown rule property/);
    const accepted = rows.map((r) => code(r[0]!));
    expect(accepted).toEqual(['id', 'pattern', 'category', 'code', 'retryable', 'reason', 'in', 'caseSensitive', 'note']);
  });

  it('each example text is classified as its row says', () => {
    for (const [text, rule, category, c, retryable] of table('plain-failures')) {
      const m = classifyPlainFailure({ text: code(text!) }, [shippedFailureRules()]);
      if (rule === '—') {
        expect(m, text).toBeNull();
        expect([code(category!), code(c!), code(retryable!)]).toEqual(['internal', 'tool-error', 'false']);
      } else {
        expect(m, text).toMatchObject({ rule: code(rule!), category: code(category!), code: code(c!), retryable: code(retryable!) === 'true' });
      }
    }
  });
});
