import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress } from './progress.js';
import { SAMPLES, ndjson } from './test-support/envelopes.js';
import { runVerb } from './test-support/run-verb.js';
import * as validate from './validate.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-validate-'));
function file(name: string, text: string): string {
  writeFileSync(path.join(dir, name), text);
  return name;
}

describe('tool-envelope validate', () => {
  it('gives a verdict per NDJSON line, with the detected contract and each violation', async () => {
    const f = file('mixed.ndjson', ndjson(SAMPLES.mcecOk, '', SAMPLES.dwBadStatus, '{"ok": tru', SAMPLES.contextosCall, SAMPLES.contextosResult, { hello: 1 }));
    const r = await runVerb(validate, [f], { cwd: dir });
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toBe('mixed.ndjson:1: valid (mcec)');
    expect(lines[1]).toBe('mixed.ndjson:3: invalid (dw): /status enum must be equal to one of the allowed values');
    expect(lines[2]).toMatch(/^mixed\.ndjson:4: invalid \(unknown\): \(document\) invalid-json invalid JSON at line 1, column 8/);
    expect(lines[3]).toBe('mixed.ndjson:5: valid (contextos-call)');
    expect(lines[4]).toBe('mixed.ndjson:6: valid (contextos)');
    expect(lines[5]).toMatch(/^mixed\.ndjson:7: invalid \(unknown\): \(document\) unknown-contract /);
    expect(r.stderr).toBe('');
  });

  it('exits 0 when every document is valid, across several files', async () => {
    const a = file('a.ndjson', ndjson(SAMPLES.mcecOk, SAMPLES.mcecError));
    const b = file('b.json', JSON.stringify(SAMPLES.dwOk, null, 2));
    const r = await runVerb(validate, [a, b], { cwd: dir });
    expect(r.stdout).toBe('a.ndjson:1: valid (mcec)\na.ndjson:2: valid (mcec)\nb.json:1: valid (dw)\n');
    expect(r.code).toBe(0);
  });

  it('prints one JSON object per document with --format json', async () => {
    const f = file('j.ndjson', ndjson(SAMPLES.dwOk, SAMPLES.dwBadStatus));
    const r = await runVerb(validate, ['--format', 'json', f], { cwd: dir });
    expect(r.code).toBe(1);
    const verdicts = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as validate.Verdict);
    expect(verdicts[0]).toEqual({ file: 'j.ndjson', line: 1, valid: true, contract: 'dw', issues: [] });
    expect(verdicts[1]).toMatchObject({ file: 'j.ndjson', line: 2, valid: false, contract: 'dw' });
    expect(verdicts[1]!.issues).toContainEqual(expect.objectContaining({ code: 'enum', path: '/status' }));
  });

  it('checks against the given dialect instead of detecting', async () => {
    const f = file('d.ndjson', ndjson(SAMPLES.mcecOk, SAMPLES.contextosCall));
    const r = await runVerb(validate, ['--dialect', 'contextos-result', f], { cwd: dir });
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^d\.ndjson:1: invalid \(contextos-result\): \/envelope_version required .*; \/ok additionalProperties /);
    expect(lines[1]).toMatch(/^d\.ndjson:2: invalid \(contextos-result\): /);
    const call = await runVerb(validate, ['--dialect', 'contextos-call', '-'], { stdin: ndjson(SAMPLES.contextosCall) });
    expect(call.stdout).toBe('<stdin>:1: valid (contextos-call)\n');
    expect(call.code).toBe(0);
  });

  it('reads one pretty-printed document as one document, and a broken one as NDJSON lines', async () => {
    const pretty = '\n' + JSON.stringify(SAMPLES.contextosCall, null, 2) + '\n';
    const ok = await runVerb(validate, ['-'], { stdin: pretty });
    expect(ok.stdout).toBe('<stdin>:2: valid (contextos-call)\n');
    const broken = await runVerb(validate, ['-'], { stdin: '{\n  "ok": true,\n}\n' });
    expect(broken.code).toBe(1);
    const lines = broken.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.every((l) => l.includes('invalid-json'))).toBe(true);
  });

  it('streams NDJSON: the first verdict is out before the input ends', async () => {
    const stdin = new PassThrough();
    let firstVerdict!: () => void;
    const seen = new Promise<void>((r) => (firstVerdict = r));
    const running = runVerb(validate, ['-'], {
      stdin,
      onStdout: (c) => {
        if (c.includes('<stdin>:1: valid (mcec)')) firstVerdict();
      },
    });
    stdin.write(JSON.stringify(SAMPLES.mcecOk) + '\n');
    await seen;
    stdin.end(JSON.stringify(SAMPLES.dwOk) + '\n');
    const r = await running;
    expect(r.stdout).toBe('<stdin>:1: valid (mcec)\n<stdin>:2: valid (dw)\n');
    expect(r.code).toBe(0);
  });

  it('stops when aborted, even while waiting for more input', async () => {
    const stdin = new PassThrough();
    const controller = new AbortController();
    const running = runVerb(validate, ['-'], {
      stdin,
      signal: controller.signal,
      onStdout: (c) => {
        // Abort once the verb is idle, waiting for a line that never comes.
        if (c.includes('<stdin>:1:')) setTimeout(() => controller.abort(), 50);
      },
    });
    stdin.write(JSON.stringify(SAMPLES.mcecOk) + '\n');
    // stdin never ends: only the abort can finish the run.
    const r = await running;
    expect(r.stdout).toBe('<stdin>:1: valid (mcec)\n');
    expect(r.code).toBe(0);
  });

  it('handles a large NDJSON input with CRLF line ends and a BOM', async () => {
    const n = 20_000;
    const lines: string[] = [];
    for (let i = 0; i < n; i++) lines.push(JSON.stringify(i % 1000 === 7 ? SAMPLES.dwBadStatus : { ok: true, result: { i } }));
    const f = file('big.ndjson', '\ufeff' + lines.join('\r\n') + '\r\n');
    const r = await runVerb(validate, ['--format', 'json', f], { cwd: dir });
    const verdicts = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as validate.Verdict);
    expect(verdicts).toHaveLength(n);
    expect(verdicts.filter((v) => !v.valid).map((v) => v.line)).toEqual(Array.from({ length: n / 1000 }, (_, k) => k * 1000 + 8));
    expect(r.code).toBe(1);
  });

  it('reports an unreadable input with exit 2 and goes on with the others', async () => {
    const ok = file('ok.ndjson', ndjson(SAMPLES.mcecOk));
    const r = await runVerb(validate, ['missing.ndjson', ok, '.'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot read missing\.ndjson: .*ENOENT/);
    expect(r.stderr).toMatch(/cannot read \.: .*EISDIR/);
    expect(r.stdout).toBe('ok.ndjson:1: valid (mcec)\n');
  });

  it('rejects usage errors with exit 2', async () => {
    for (const args of [['--dialect', 'nope', 'x'], ['--format', 'yaml', 'x'], ['--bogus', 'x'], []]) {
      const r = await runVerb(validate, args, { cwd: dir });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^tool-envelope validate: .*\nRun 'tool-envelope validate --help'/);
      expect(r.stdout).toBe('');
    }
  });

  it('has help with examples and exit codes', () => {
    expect(validate.help).toMatch(/Examples:/);
    expect(validate.help).toMatch(/Exit codes: 0 .*1 .*\n.*2 /s);
  });
});

describe('progress', () => {
  it('is quiet when stderr is not a terminal', () => {
    const s = new PassThrough();
    let text = '';
    s.on('data', (c: Buffer) => (text += c.toString()));
    const p = createProgress(s, 'x', { redrawMs: 0 });
    for (let i = 0; i < 1000; i++) p.tick();
    p.done();
    expect(text).toBe('');
  });

  it('shows documents and documents/s on a terminal, and clears the line when done', () => {
    const s = Object.assign(new PassThrough(), { isTTY: true });
    let text = '';
    s.on('data', (c: Buffer) => (text += c.toString()));
    const p = createProgress(s, 'big.ndjson', { redrawMs: 0 });
    for (let i = 0; i < 512; i++) p.tick();
    expect(text).toMatch(/big\.ndjson: 256 documents, \d+ documents\/s/);
    expect(text).toMatch(/big\.ndjson: 512 documents/);
    p.done();
    expect(text.endsWith('\r\x1b[2K')).toBe(true);
  });

  it('the validate verb writes no progress to a stderr that is not a terminal', async () => {
    const docs = ndjson(...Array.from({ length: 600 }, () => SAMPLES.mcecOk));
    const quiet = await runVerb(validate, ['-'], { stdin: docs });
    expect(quiet.stderr).toBe('');
  });
});
