// Reloading a policy file (#38 point 7): a real file in a temporary folder and Node's fs.watch. A
// change (written in place, or saved by rename as editors do) puts the new policy in force after the
// debounce; a document that does not load, or whose own test cases fail, or that changes what the
// audit log redacts, is refused with its errors and the policy in force stays.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolEnvelopeError } from 'tool-envelope/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../store/index.js';
import { GovernancePipeline } from './pipeline.js';
import { loadPolicyFile, parsePolicy } from './policy-load.js';
import { PolicyReloader } from './policy-reload.js';
import type { CompiledPolicy } from './policy-types.js';

const ALLOW = 'version: 1\nrules:\n  - { name: open, match: { tool: t }, effect: allow }\n';
const DENY = 'version: 1\nrules:\n  - { name: shut, match: { tool: t }, effect: deny }\n';

let open: PolicyReloader[] = [];
let dirs: string[] = [];
afterEach(() => {
  for (const r of open) r.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  open = [];
  dirs = [];
});

interface Watched {
  reloader: PolicyReloader;
  pipeline: GovernancePipeline;
  file: string;
  /** The next outcome the watch reports: the policy applied, or the error of a refusal. */
  next(): Promise<CompiledPolicy | ToolEnvelopeError>;
}

async function watched(text: string, watch = true): Promise<Watched> {
  const dir = mkdtempSync(join(tmpdir(), 'te-reload-'));
  dirs.push(dir);
  const file = join(dir, 'policy.yaml');
  writeFileSync(file, text);
  const pipeline = new GovernancePipeline({ store: createMemoryStore(), policy: await loadPolicyFile(file), audit: false });
  const waiting: ((v: CompiledPolicy | ToolEnvelopeError) => void)[] = [];
  const report = (v: CompiledPolicy | ToolEnvelopeError): void => waiting.shift()?.(v);
  const reloader = new PolicyReloader(
    { file, watch, debounceMs: 50, apply: (p) => pipeline.usePolicy(p), onApplied: (p) => report(p), onRefused: (e) => report(e) },
    pipeline.policy as CompiledPolicy,
  );
  open.push(reloader);
  return { reloader, pipeline, file, next: () => new Promise((resolve) => waiting.push(resolve)) };
}

describe('PolicyReloader', () => {
  it('puts a changed file in force, written in place or saved by rename', async () => {
    const w = await watched(ALLOW);
    let next = w.next();
    writeFileSync(w.file, DENY);
    const applied = (await next) as CompiledPolicy;
    expect(applied.digest).toBe(parsePolicy(DENY, 'yaml').digest);
    expect(w.pipeline.policy).toBe(applied);
    next = w.next();
    writeFileSync(`${w.file}.tmp`, ALLOW);
    renameSync(`${w.file}.tmp`, w.file);
    expect(((await next) as CompiledPolicy).digest).toBe(parsePolicy(ALLOW, 'yaml').digest);
  });

  it('refuses a document that does not load and keeps the policy in force', async () => {
    const w = await watched(ALLOW);
    const before = w.pipeline.policy;
    const next = w.next();
    writeFileSync(w.file, 'version: 1\nrules:\n  - { effect: permit }\n');
    const err = (await next) as ToolEnvelopeError;
    expect(err).toBeInstanceOf(ToolEnvelopeError);
    expect(err.message).toMatch(/\/rules\/0\/effect must be one of allow, deny, require-approval/);
    expect(w.pipeline.policy).toBe(before);
  });

  it('refuses a document whose own test cases fail, and a change of what the audit log redacts', async () => {
    const w = await watched(ALLOW, false);
    const before = w.pipeline.policy;
    writeFileSync(w.file, `${DENY}tests:\n  - { name: t runs, call: { tool: t }, expect: allow }\n`);
    let next = w.next();
    expect(await w.reloader.reload()).toBe('refused');
    expect(((await next) as ToolEnvelopeError).message).toMatch(/\/tests\/0 t runs: expected allow, got deny/);
    writeFileSync(w.file, `${DENY}redact:\n  t: ['/args/secret']\n`);
    next = w.next();
    expect(await w.reloader.reload()).toBe('refused');
    expect(((await next) as ToolEnvelopeError).message).toMatch(/redacts other values .* needs a restart/);
    expect(w.pipeline.policy).toBe(before);
    // The same document again changes nothing.
    writeFileSync(w.file, ALLOW);
    expect(await w.reloader.reload()).toBe('unchanged');
  });

  it('refuses hostile documents on reload (10 MB, deep nesting, an unknown function, past the cost limit), the policy in force staying', async () => {
    const w = await watched(ALLOW, false);
    const before = w.pipeline.policy;
    const hundred = `[${Array.from({ length: 100 }, (_, i) => i).join(',')}]`;
    const hostile: [string, string, RegExp][] = [
      [`version: 1\n# ${'x'.repeat(10 * 1024 * 1024)}\n`, 'too-large', /larger than/],
      [`{"version":1,"x":${'['.repeat(5000)}${']'.repeat(5000)}}`, 'too-deep', /nests deeper than 32 levels/],
      ['version: 1\nrules:\n  - { when: "system(args.x)", effect: allow }\n', 'invalid-option', /unknown function "system"/],
      [
        `version: 1\nrules:\n  - { when: "${hundred}.all(a, ${hundred}.all(b, a + b >= 0 && a * b >= 0))", effect: allow }\n`,
        'invalid-option',
        /costs more than/,
      ],
    ];
    for (const [text, code, message] of hostile) {
      writeFileSync(w.file, text);
      const next = w.next();
      expect(await w.reloader.reload()).toBe('refused');
      expect(await next).toMatchObject({ code, message: expect.stringMatching(message) });
      expect(w.pipeline.policy).toBe(before);
    }
  });

  // The watch sees a save and the operator sends SIGHUP: two reads of one change, one log line.
  it('reports a refusal once per change: the same text read again is refused in silence', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'te-reload-'));
    dirs.push(dir);
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, ALLOW);
    const refused: string[] = [];
    const reloader = new PolicyReloader({ file, watch: false, apply: () => undefined, onRefused: (e) => refused.push(e.message) }, await loadPolicyFile(file));
    open.push(reloader);
    writeFileSync(file, 'version: 1\nrules: [\n');
    expect(await reloader.reload()).toBe('refused');
    expect(await reloader.reload()).toBe('refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/policy\.yaml: invalid YAML: /);
    writeFileSync(file, 'version: 1\nrules: [\n# another\n');
    expect(await reloader.reload()).toBe('refused');
    expect(refused).toHaveLength(2);
    // Back to the policy in force, then the first bad text again: a new change, reported again.
    writeFileSync(file, ALLOW);
    expect(await reloader.reload()).toBe('unchanged');
    writeFileSync(file, 'version: 1\nrules: [\n');
    expect(await reloader.reload()).toBe('refused');
    expect(refused).toHaveLength(3);
  });

  it('runs reloads one at a time: one asked for during another reads the file after it', async () => {
    const w = await watched(ALLOW, false);
    writeFileSync(w.file, DENY);
    const first = w.reloader.reload();
    const second = w.reloader.reload();
    expect(await first).toBe('applied');
    expect(await second).toBe('applied');
    expect((w.pipeline.policy as CompiledPolicy).digest).toBe(parsePolicy(DENY, 'yaml').digest);
  });
});
