// The CLI under hostile input, as a user meets it: the built `tool-envelope` in a child process
// under a 512 MiB heap, real files, FIFOs and pipes, signals. Each case is one bullet of issue 15.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { randomFillSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { oracleValidate, repoRoot } from '../../test/oracle.js';
import { SAMPLES } from './test-support/envelopes.js';

const MAIN = path.join(repoRoot, 'dist/src/cli/main.js');
const dir = mkdtempSync(path.join(tmpdir(), 'te-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function start(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--max-old-space-size=512', MAIN, ...args], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
}

function collect(child: ChildProcess, started = Date.now()): Promise<Run> {
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started })));
}

function cli(args: string[], stdin?: string | Buffer): Promise<Run> {
  const child = start(args);
  child.stdin!.on('error', () => {});
  child.stdin!.end(stdin ?? '');
  return collect(child);
}

function file(name: string, content: string | Buffer): string {
  writeFileSync(path.join(dir, name), content);
  return name;
}

/** Writes `chunks` to the child's stdin as it reads them, then ends it; stops early when the child stops reading. */
async function feed(child: ChildProcess, chunks: Iterable<Buffer>): Promise<void> {
  const stdin = child.stdin!;
  stdin.on('error', () => {});
  for (const chunk of chunks) {
    if (stdin.destroyed) break;
    if (!stdin.write(chunk)) {
      await new Promise<void>((r) => {
        const done = (): void => {
          stdin.off('drain', done).off('close', done);
          r();
        };
        stdin.on('drain', done).on('close', done);
      });
    }
  }
  stdin.end();
}

const noStack = (r: Run): void => {
  expect(r.stderr).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
  expect(r.stdout).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
};

// Independent CLI runs (files of their own, nothing timed): the tests of this group run together.
describe.concurrent('empty input is an error', () => {
  it.each([
    ['an empty file', 'empty.json', ''],
    ['a file of blank lines', 'blank.ndjson', '\n\n   \r\n\t\n'],
  ])('validate and convert of %s exit 1 with "no documents"', async (_what, name, content) => {
    const f = file(name, content);
    for (const args of [
      ['validate', f],
      ['convert', '--to', 'dw', f],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toContain(`${f}: no documents`);
      expect(r.stdout).toBe('');
    }
  });

  it('empty stdin too', async () => {
    for (const args of [
      ['validate', '-'],
      ['convert', '--to', 'mcec', '-'],
    ]) {
      const r = await cli(args, '');
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('<stdin>: no documents');
    }
  });
});

describe('a document with a million violations', () => {
  const warnings = Array.from({ length: 1_000_000 }, () => ({ code: 1 }));
  const big = file('million.json', JSON.stringify({ ok: true, result: 1, warnings }));

  it('lists 100 issues and counts the rest, in bounded memory (a 512 MiB heap) and on a short line', async () => {
    const r = await cli(['validate', big]);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(1);
    const line = r.stdout.trimEnd();
    expect(line.split('\n')).toHaveLength(1);
    expect(line.split('; ').length).toBe(101);
    const more = /\.\.\. and (\d+) more \(raise --max-issues to list them\)$/.exec(line);
    expect(Number(more?.[1])).toBe(2_000_001 - 100);
    expect(line.length).toBeLessThan(16_000);
  });

  it('--max-issues N lists N, and --format json carries the count of the rest', async () => {
    const r = await cli(['validate', '--max-issues', '3', '--format', 'json', big]);
    expect(r.code).toBe(1);
    const verdict = JSON.parse(r.stdout) as { issues: unknown[]; unlisted: number };
    expect(verdict.issues).toHaveLength(3);
    expect(verdict.unlisted).toBe(2_000_001 - 3);
    const bad = await cli(['validate', '--max-issues', '0', big]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--max-issues must be a positive integer (got '0')");
  });

  it('convert reports it invalid the same bounded way', async () => {
    const r = await cli(['convert', '--to', 'dw', '--max-issues', '5', big]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('; ')).toHaveLength(6);
    expect(r.stderr).toMatch(/and 1999996 more/);
  });
});

describe('any line length gives a typed error, never a stack', () => {
  it('validate /dev/zero', async () => {
    const r = await cli(['validate', '/dev/zero']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^\/dev\/zero:1: invalid \(unknown\): \(document\) too-large a document at offset 0 is larger than the 67108864-byte limit/);
    noStack(r);
  });

  it('70 MB without a newline on stdin', async () => {
    const child = start(['validate', '-']);
    const done = collect(child);
    const chunk = Buffer.alloc(1024 * 1024, 0x7b);
    await feed(
      child,
      Array.from({ length: 70 }, () => chunk),
    );
    const r = await done;
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/too-large a document at offset 0 is larger than the 67108864-byte limit; the rest of the input is not read/);
    noStack(r);
  });

  it('an NDJSON line over the limit after good lines: those are checked, then the error', async () => {
    const f = path.join(dir, 'longline.ndjson');
    const fd = openSync(f, 'w');
    writeSync(fd, `${JSON.stringify(SAMPLES.mcecOk)}\n${JSON.stringify(SAMPLES.dwOk)}\n"`);
    writeSync(fd, Buffer.alloc(65 * 1024 * 1024, 0x61));
    closeSync(fd);
    const r = await cli(['validate', 'longline.ndjson']);
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 2)).toEqual(['longline.ndjson:1: valid (mcec)', 'longline.ndjson:2: valid (dw)']);
    expect(lines[2]).toMatch(/^longline\.ndjson:3: invalid \(unknown\): \(document\) too-large a line at offset \d+ is larger/);
  });
});

describe('a whole-file JSON document is one document at any size', () => {
  it('a pretty-printed 10 MB document is one verdict, not a line each', async () => {
    const doc = { ok: true, result: { rows: Array.from({ length: 100_000 }, (_, i) => ({ id: i, name: `row ${i}`, tags: ['a', 'b'] })) } };
    const f = file('pretty.json', JSON.stringify(doc, null, 2));
    expect(readFileSync(path.join(dir, f)).length).toBeGreaterThan(10_000_000);
    const r = await cli(['validate', f]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('pretty.json:1: valid (mcec)\n');
  });

  it('a pretty-printed document over the limit is one too-large document', async () => {
    const f = path.join(dir, 'huge-pretty.json');
    const fd = openSync(f, 'w');
    writeSync(fd, '{\n  "ok": true,\n  "result": [\n');
    const rows = Buffer.from('    "0123456789012345678901234567890123456789012345678901234567890123456789",\n'.repeat(10_000));
    for (let written = 0; written < 70 * 1024 * 1024; written += rows.length) writeSync(fd, rows);
    writeSync(fd, '    0\n  ]\n}\n');
    closeSync(fd);
    const r = await cli(['validate', 'huge-pretty.json']);
    expect(r.code).toBe(1);
    expect(r.stdout.trimEnd().split('\n')).toEqual([
      'huge-pretty.json:1: invalid (unknown): (document) too-large a document at offset 0 is larger than the 67108864-byte limit; the rest of the input is not read',
    ]);
  });
});

// The reader holds a document's bytes, not an object per line, and refuses it in the chunk that
// passes the limit. 96 MB (1.5 times the limit) shows it as well as 200 MB, in a second or two: the
// previous reader ran out of a 256 MiB heap on the pretty-printed document within its first 64 MiB
// (a record per line, about 1 GiB), and nothing past the limit is read either way. A first line
// that is not JSON by itself is held to the grammar before JSON.parse, which would build most of a
// 40 MB array before failing (the previous reader ran out of memory there too). The inputs are made
// chunk by chunk, so the test holds none of them whole either.
describe.concurrent('a document over the limit is refused in bounded memory, whatever its layout', () => {
  // Each input is its segments in order: a text repeated up to a size, or once (size 0).
  const layouts = {
    'pretty-printed': {
      segments: [
        ['\n{\n  "ok": true,\n  "result": [\n', 0],
        ['    {\n      "id": 1,\n      "name": "row"\n    },\n', 96_000_000],
        ['    0\n  ]\n}\n', 0],
      ],
      line: 2,
      offset: 1,
    },
    'one-line': {
      segments: [
        [' \n\n{"ok":true,"result":[', 0],
        ['{"id":1,"name":"row"},', 96_000_000],
        ['0]}\n', 0],
      ],
      line: 3,
      offset: 3,
    },
    'unclosed 40 MB first line': {
      segments: [
        ['\n[', 0],
        ['0,', 40_000_000],
        ['\n', 0],
        ['  0,\n', 56_000_000],
        ['0]\n', 0],
      ],
      line: 2,
      offset: 1,
    },
  } as const;
  function* chunks(layout: keyof typeof layouts): Generator<Buffer> {
    for (const [text, size] of layouts[layout].segments) {
      if (size === 0) yield Buffer.from(text);
      const block = Buffer.from(text.repeat(Math.ceil(65_536 / text.length)));
      for (let n = 0; n < size; n += block.length) yield block;
    }
  }

  it.each([
    ['pretty-printed', 'a file', 'validate'],
    ['pretty-printed', 'stdin', 'convert'],
    ['one-line', 'a file', 'convert'],
    ['one-line', 'stdin', 'validate'],
    ['unclosed 40 MB first line', 'a file', 'validate'],
  ] as const)(
    '%s, 96 MB, from %s (%s), under a 256 MiB heap',
    async (layout, from, verb) => {
      let name = '-';
      if (from === 'a file') {
        name = `over-limit-${layout.replaceAll(' ', '-')}-${verb}.json`;
        const fd = openSync(path.join(dir, name), 'w');
        for (const chunk of chunks(layout)) writeSync(fd, chunk);
        closeSync(fd);
      }
      const args = verb === 'validate' ? ['validate', name] : ['convert', '--to', 'dw', name];
      // The child writes its peak RSS (getrusage, KiB) to fd 3 as it exits.
      const peak = 'data:text/javascript,import{writeSync}from"node:fs";process.on("exit",()=>writeSync(3,String(process.resourceUsage().maxRSS)))';
      const child = spawn(process.execPath, ['--max-old-space-size=256', '--import', peak, MAIN, ...args], {
        cwd: dir,
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      });
      let maxRssKb = '';
      child.stdio[3]!.on('data', (c: Buffer) => (maxRssKb += c.toString()));
      const done = collect(child);
      await feed(child, from === 'stdin' ? chunks(layout) : []);
      const r = await done;
      const { line, offset } = layouts[layout];
      const refusal = `too-large a document at offset ${offset} is larger than the 67108864-byte limit; the rest of the input is not read`;
      expect(r.signal).toBeNull();
      expect(r.code, r.stderr.slice(0, 2_000)).toBe(1);
      if (verb === 'validate') {
        expect(r.stdout).toBe(`${from === 'stdin' ? '<stdin>' : name}:${line}: invalid (unknown): (document) ${refusal}\n`);
      } else {
        expect(r.stdout).toBe('');
        expect(r.stderr).toContain(`doc 1 (line ${line}): invalid: (document) ${refusal}`);
      }
      noStack(r);
      expect(Number(maxRssKb)).toBeGreaterThan(0);
      expect(Number(maxRssKb)).toBeLessThan(256 * 1024);
    },
    60_000,
  );
});

describe('stdout and stderr writes respect backpressure', () => {
  it('convert of 40 MB of random bytes, its stderr read slowly, stays small and reports every line', async () => {
    const bytes = randomFillSync(Buffer.alloc(40 * 1024 * 1024));
    const f = file('random.bin', bytes);
    let lines = 0;
    for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, nl + 1)) lines++;
    const child = start(['convert', '--to', 'dw', f]);
    child.stdin!.end();
    const done = collect(child);
    const exited = new Promise<string>((r) => child.once('exit', (code, signal) => r(`exit code ${code}, signal ${signal}`)));
    child.stderr!.pause();
    // Unread, its stderr fills and the child waits: it neither finishes nor buffers its reports.
    const early = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2_000))]);
    if (early !== undefined) {
      child.stderr!.resume();
      const r = await done;
      expect.fail(`the child ended while its stderr was unread (${early} after ${r.ms} ms); stderr began: ${r.stderr.slice(0, 600)}`);
    }
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
    expect(rssKb).toBeLessThan(400 * 1024);
    child.stderr!.resume();
    const r = await done;
    expect(r.code).toBe(1);
    const reported = r.stderr.split('\n').filter((l) => /^doc \d+ /.test(l)).length;
    expect(reported).toBeGreaterThan(lines / 2);
    noStack(r);
  }, 120_000);
});

// Independent CLI runs (files of their own, nothing timed): the tests of this group run together.
describe.concurrent('numbers outside the double range and invalid UTF-8 are errors naming the offset', () => {
  it.each([
    ['{"ok":true,"result":1e400}', 20],
    ['{"ok":true,"result":{"n":-1e400}}', 25],
    ['{"ok":true,"result":[0, 1e-400]}', 24],
  ])('%s', async (text, offset) => {
    const v = await cli(['validate', '-'], `${text}\n`);
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(
      `number-out-of-range number ${text.slice(offset).match(/^-?[\d.e+-]+/)![0]} at offset ${offset} is outside the range of a double`,
    );
    const c = await cli(['convert', '--to', 'dw', '-'], `${text}\n`);
    expect(c.code).toBe(1);
    expect(c.stdout).toBe('');
    expect(c.stderr).toContain(`at offset ${offset}`);
  });

  it('1e308 and strings that look like big numbers pass untouched', async () => {
    const r = await cli(['convert', '--to', 'mcec', '--from', 'mcec', '-'], '{"ok":true,"result":{"a":1e308,"b":"1e400"}}\n');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, result: { a: 1e308, b: '1e400' } });
  });

  it('invalid UTF-8 (a lone byte, an overlong form, a surrogate) is reported, never turned into U+FFFD', async () => {
    const head = Buffer.from('{"ok":true,"result":"a');
    for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80]]) {
      const input = Buffer.concat([Buffer.from(`${JSON.stringify(SAMPLES.mcecOk)}\n`), head, Buffer.from(bad), Buffer.from('"}\n')]);
      const offset = JSON.stringify(SAMPLES.mcecOk).length + 1 + head.length;
      const v = await cli(['validate', '-'], input);
      expect(v.code).toBe(1);
      expect(v.stdout).toContain(`<stdin>:2: invalid (unknown): (document) invalid-utf8 not UTF-8: byte 0x${bad[0]!.toString(16)} at offset ${offset}`);
      const c = await cli(['convert', '--to', 'dw', '-'], input);
      expect(c.code).toBe(1);
      expect(c.stdout).not.toContain('\ufffd');
      expect(c.stdout.trimEnd().split('\n')).toHaveLength(1);
      expect(c.stderr).toContain(`doc 2 (line 2): invalid: (document) invalid-utf8 not UTF-8: byte 0x${bad[0]!.toString(16)} at offset ${offset}`);
    }
  });
});

describe('SIGINT and SIGTERM end the CLI promptly at any point', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('%s while blocked reading a FIFO that has a writer but no data', async (sig, code) => {
    const fifo = path.join(dir, `fifo-${sig}`);
    execFileSync('mkfifo', [fifo]);
    // A writer that holds the FIFO open and writes nothing: the reader blocks in read().
    const writer = spawn('sh', ['-c', `exec 3>'${fifo}'; sleep 30`], { stdio: 'ignore' });
    try {
      const child = start(['validate', fifo]);
      child.stdin!.end();
      const done = collect(child);
      await new Promise((r) => setTimeout(r, 1_500));
      const sent = Date.now();
      child.kill(sig);
      const r = await done;
      expect(Date.now() - sent).toBeLessThan(3_000);
      expect(r.code === code || r.signal === sig).toBe(true);
      noStack(r);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  it('SIGINT while waiting on an open stdin pipe exits 130 at once; a run half-way through its input too', async () => {
    const child = start(['validate', '-']);
    const done = collect(child);
    child.stdin!.write(`${JSON.stringify(SAMPLES.mcecOk)}\n`);
    await new Promise((r) => setTimeout(r, 1_500));
    const sent = Date.now();
    child.kill('SIGINT');
    const r = await done;
    expect(Date.now() - sent).toBeLessThan(1_500);
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('<stdin>:1: valid (mcec)\n');
  });
});

// Independent CLI runs (files of their own, nothing timed): the tests of this group run together.
describe.concurrent('identity conversion within a contract, for every envelope kind', () => {
  it.each([
    ['mcec', SAMPLES.mcecOk],
    ['mcec', SAMPLES.mcecError],
    ['dw', SAMPLES.dwOk],
    ['contextos', SAMPLES.contextosResult],
    ['contextos', SAMPLES.contextosCall],
  ] as const)('--to %s returns the document unchanged', async (to, doc) => {
    for (const from of ['auto', to]) {
      const r = await cli(['convert', '--to', to, '--from', from, '-'], `${JSON.stringify(doc)}\n`);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe(`${JSON.stringify(doc)}\n`);
      expect(oracleValidate(to === 'contextos' ? 'contextos' : to, JSON.parse(r.stdout)).valid).toBe(true);
    }
  });

  it('a ContextOS call envelope to another contract is a clear per-document error', async () => {
    const r = await cli(['convert', '--to', 'dw', '-'], `${JSON.stringify(SAMPLES.contextosCall)}\n`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'doc 1 (line 1): invalid (contextos-call): (document) unknown-contract a ContextOS call envelope is not a tool result; only --to contextos keeps it',
    );
  });
});
