// Small input files read with a byte cap whatever they are (a device, a FIFO, a large regular file):
// the built CLI in a child process under a 256 MiB heap, as an operator runs it. A tokens file is at
// most 4 MiB, a `policy explain --call` file at most 1 MiB; past the cap the rest is not read.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../test/oracle.js';
import { tokenDigest } from '../mcp/serve/auth.js';

const MAIN = path.join(repoRoot, 'dist/src/cli/main.js');
const dir = mkdtempSync(path.join(tmpdir(), 'te-bounded-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stderr: string;
  ms: number;
}

function cli(args: string[]): Promise<Run> {
  if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
  const started = Date.now();
  const child = spawn(process.execPath, ['--max-old-space-size=256', MAIN, ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr, ms: Date.now() - started })));
}

/** A FIFO an endless writer fills (it ends on EPIPE once the reader closes, or at the test's end). */
function endlessFifo(name: string): { file: string; writer: ChildProcess } {
  const file = path.join(dir, name);
  execFileSync('mkfifo', [file]);
  const writer = spawn('sh', ['-c', `cat /dev/zero > '${file}'`], { stdio: 'ignore' });
  return { file, writer };
}

const GATEWAY = (tokens: string): string[] => ['gateway', '--no-store', '--http', '0', '--auth', 'tokens', tokens, '--', 'node', 'x.js'];

describe.concurrent('a tokens file is read at most 4 MiB', () => {
  it.each([
    ['a device (/dev/zero)', () => '/dev/zero'],
    [
      'a regular file of 6 MiB that is not YAML',
      () => {
        writeFileSync(path.join(dir, 'big.txt'), Buffer.alloc(6 * 1024 * 1024, 'x:: ['));
        return 'big.txt';
      },
    ],
  ])('%s: refused at the cap, exit 2', async (_what, make) => {
    const file = make();
    const r = await cli(GATEWAY(file));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the tokens file ${path.resolve(dir, file)} is larger than 4194304 bytes`);
    expect(r.ms).toBeLessThan(15_000);
  });

  it('a FIFO that never ends: refused at the cap, exit 2', async () => {
    const { file, writer } = endlessFifo('tokens.fifo');
    try {
      const r = await cli(GATEWAY(file));
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`the tokens file ${file} is larger than 4194304 bytes`);
    } finally {
      writer.kill('SIGKILL');
    }
  });
});

describe('a tokens file just under the cap', () => {
  it('29 000 YAML entries (4 MB) load under a 256 MiB heap and the gateway serves', async () => {
    const EXAMPLE = path.join(repoRoot, 'dist/examples/example-server.js');
    const entries = Array.from(
      { length: 29_000 },
      (_, i) => `  - sha256: ${tokenDigest(`t${i}`)}\n    principal: user:u${i}\n    tenant: acme\n    roles: [approver]\n`,
    );
    writeFileSync(path.join(dir, 'many.yaml'), `tokens:\n${entries.join('')}`);
    const started = Date.now();
    const child = spawn(process.execPath, ['--max-old-space-size=256', MAIN, ...GATEWAY('many.yaml').slice(0, -2), process.execPath, EXAMPLE], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    try {
      while (!out.includes('MCP endpoint')) {
        if (child.exitCode !== null || Date.now() - started > 30_000) throw new Error(`gateway did not start: ${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(err).not.toMatch(/WARNING|heap/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe.concurrent('a --call file is read at most 1 MiB, whatever it is', () => {
  it.each([
    ['a device (/dev/zero)', () => '/dev/zero'],
    ['a FIFO that never ends', () => endlessFifo('call.fifo')],
  ])('%s: refused at the cap, exit 2', async (_what, make) => {
    writeFileSync(path.join(dir, 'ok.json'), '{"version":1}');
    const made = make();
    const file = typeof made === 'string' ? made : made.file;
    try {
      const r = await cli(['policy', 'explain', 'ok.json', '--call', file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${file} is larger than 1048576 bytes`);
      expect(r.ms).toBeLessThan(15_000);
    } finally {
      if (typeof made !== 'string') made.writer.kill('SIGKILL');
    }
  });
});
