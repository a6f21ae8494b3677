/** How validate and convert print issues: a hostile document's keys and values cannot act on the terminal. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatIssues } from './report.js';
import { runVerb } from './test-support/run-verb.js';
import * as validate from './validate.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-cli-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('issue lines', () => {
  it('show the control characters of a pointer or message as ?', () => {
    expect(formatIssues([{ path: '/\u001b[31mevil\u0007', code: 'additionalProperties', message: 'must NOT have \u009b2J' }])).toBe(
      '/?[31mevil? additionalProperties must NOT have ?2J',
    );
  });

  it('validate of a document with a hostile key: the verdict line is inert', async () => {
    writeFileSync(path.join(dir, 'evil.json'), '{"ok":false,"\\u001b[31mevil\\u0007":1}');
    const r = await runVerb(validate, ['evil.json'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('/?[31mevil? additionalProperties');
    expect(r.stdout + r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });
});
