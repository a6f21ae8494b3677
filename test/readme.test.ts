import { createHash } from 'node:crypto';
/**
 * The README, to the letter: every fenced block is extracted and exercised.
 *
 * - `ts` blocks are typechecked together against the built package (resolved by its name,
 *   `tool-envelope`, through `exports`) with a real SDK `Client` for `client`; the names a snippet
 *   leaves to the reader are declared in READER_NAMES below, and nothing else.
 * - `json` blocks parse; the MCP client config is run: its command line, with the published
 *   package's `npx -y tool-envelope` replaced by the clone's linked bin, serves a real SDK client.
 * - `sh` lines each need a handler in SHELL below, which runs the line against a fresh clone of
 *   this repository (git clone of HEAD with this run's install and build, the command linked onto
 *   a scratch PATH) in the test's own way (a free port instead of 3333, the bundled example
 *   server for `my-server.js`). A line with no handler fails the test, so a line added to the
 *   README is flagged until it is exercised.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { repoRoot } from './oracle.js';

interface Block {
  lang: string;
  line: number;
  text: string;
}

function blocks(markdown: string): Block[] {
  const out: Block[] = [];
  const re = /^( *)```(\w*)\n([\s\S]*?)^\1```$/gm;
  for (let m: RegExpExecArray | null; (m = re.exec(markdown)); ) {
    const indent = m[1]!.length;
    const text = m[3]!
      .split('\n')
      .map((l) => l.slice(indent))
      .join('\n');
    out.push({ lang: m[2]!, line: markdown.slice(0, m.index).split('\n').length, text });
  }
  return out;
}

const README = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const ALL = blocks(README);
const shellLines = ALL.filter((b) => b.lang === 'sh').flatMap((b) =>
  b.text
    .split('\n')
    .map((l, i) => ({ line: b.line + 1 + i, text: l.replace(/\s+#.*$/, '').trim() }))
    .filter((l) => l.text !== ''),
);

/** Names README snippets use without defining them (the reader's own code), each block importing those it uses. */
const READER_NAMES = `
import type { Client } from '@modelcontextprotocol/client';
import type { GovernedRuntime, ToolDefinition } from 'tool-envelope/runtime';
import type { LanguageModel, ModelMessage } from 'ai';
export declare const client: Client;
export declare function use(result: unknown): void;
export declare function fixArguments(): void;
export declare function retryLater(): void;
export declare function retry(): void;
export declare function report(error: unknown): void;
export declare const deleteRepo: ToolDefinition;
export declare const otherId: string;
export declare const governed: GovernedRuntime;
export declare const model: LanguageModel;
export declare const messages: ModelMessage[];
`;

describe('README code blocks', () => {
  it('has the blocks this test knows how to run: ts, json, sh', () => {
    expect(ALL.length).toBeGreaterThan(5);
    expect(ALL.filter((b) => !['ts', 'json', 'sh'].includes(b.lang)).map((b) => `line ${b.line}: ${b.lang || '(none)'}`)).toEqual([]);
  });

  // One TypeScript program for both, as loading the peers' declarations (the AI SDK's, LangChain's)
  // is most of its cost: the README's blocks, and a consumer importing every typed subpath by name,
  // checked without skipLibCheck. Only the package's own declarations and these files are checked
  // (what skipLibCheck would skip): checking every peer's too would cost minutes and test them.
  it("every ts block typechecks against the built package, with a real SDK Client; every subpath's declarations check without skipLibCheck, under --strict and nodenext", () => {
    const dir = path.join(repoRoot, '.tool-envelope', `readme-ts-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(path.join(dir, 'reader-names.ts'), READER_NAMES);
      const names = [...READER_NAMES.matchAll(/export declare (?:const|function) (\w+)/g)].map((m) => m[1]!);
      const files = ALL.filter((b) => b.lang === 'ts').map((b) => {
        const used = names.filter((n) => new RegExp(`\\b${n}\\b`).test(b.text) && !new RegExp(`(const|function) ${n}\\b`).test(b.text));
        const file = path.join(dir, `block-line-${b.line}.ts`);
        writeFileSync(file, `${used.length ? `import { ${used.join(', ')} } from './reader-names.js';\n` : ''}${b.text}\nexport {};\n`);
        return file;
      });
      // The package resolved by its own name through its `exports` map, every subpath with types.
      const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
      const typed = Object.entries(pkg.exports)
        .filter(([, target]) => typeof target === 'object' && target !== null && 'types' in target)
        .map(([k]) => (k === '.' ? 'tool-envelope' : `tool-envelope/${k.slice(2)}`));
      expect(typed).toEqual(expect.arrayContaining(['tool-envelope', 'tool-envelope/core', 'tool-envelope/runtime', 'tool-envelope/governance']));
      const consumer = path.join(dir, 'consumer.ts');
      writeFileSync(consumer, typed.map((s, i) => `import * as m${i} from ${JSON.stringify(s)};\nexport { m${i} };\n`).join(''));
      const program = ts.createProgram([...files, consumer], {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
      });
      const dist = path.join(repoRoot, 'dist') + path.sep;
      const ours = program.getSourceFiles().filter((f) => path.resolve(f.fileName).startsWith(dist) || path.resolve(f.fileName).startsWith(dir + path.sep));
      // Every subpath's declaration entry point was found (a missing one would leave its import `any`).
      expect(ours.filter((f) => f.fileName.endsWith('index.d.ts')).length).toBeGreaterThanOrEqual(typed.length - 1);
      const diagnostics = [
        ...program.getOptionsDiagnostics(),
        ...program.getGlobalDiagnostics(),
        ...ours.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
      ].map((d) => {
        const where = d.file ? `${path.relative(repoRoot, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line}` : '';
        return `${where} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
      expect(files.length).toBeGreaterThanOrEqual(3);
      expect(diagnostics).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

// ---- The shell lines and the MCP client config, against a fresh clone. ----

const work = mkdtempSync(path.join(tmpdir(), 'te-readme-'));
const clone = path.join(work, 'clone');
const prefix = path.join(work, 'global');
const groups: number[] = [];
const stopGroup = (pid: number, signal: NodeJS.Signals = 'SIGTERM'): void => {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
};
afterAll(() => {
  for (const pid of groups) stopGroup(pid, 'SIGKILL');
  rmSync(work, { recursive: true, force: true });
});
const env = (): NodeJS.ProcessEnv => ({
  ...process.env,
  PATH: `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH}`,
  TOOL_ENVELOPE_STORE: '',
  CI: '',
  NO_COLOR: '1',
  FORCE_COLOR: '0',
});
const sh = (cmd: string, cwd = clone) => spawnSync('sh', ['-c', cmd], { cwd, encoding: 'utf8', env: env(), timeout: 300_000 });

/**
 * The fresh clone, made by one shell started as this file loads, while the ts blocks typecheck (a
 * synchronous compile in this process). The working tree's README and package files (not only the
 * last commit) are what this test checks. What `npm ci` installs and what the build makes are this
 * run's own: .ci/run is itself `npm ci` and the build in a fresh clone, and an install and a build
 * again here (a minute of CPU on two cores) would test nothing more. So the clone links this
 * repository's node_modules and copies its dist/ and generated validators, stamped as built from
 * the clone's sources (scripts/build-inputs.mjs), as a clone that ran `npm ci` and `npm start`
 * once would be.
 */
function startClone(): Promise<{ status: number | null; output: string }> {
  const script = [
    `git clone --quiet '${repoRoot}' '${clone}'`,
    ...['README.md', 'package.json', 'package-lock.json'].map((f) => `cp '${path.join(repoRoot, f)}' '${path.join(clone, f)}'`),
    `cd '${clone}'`,
    `ln -s '${path.join(repoRoot, 'node_modules')}' node_modules`,
    `cp -R '${path.join(repoRoot, 'dist')}' dist`,
    // What `npm run gen` writes into the sources, which the tests import.
    ...['src/core/generated', 'src/governance/generated'].map((d) => `cp -R '${path.join(repoRoot, d)}' '${d}'`),
    `node --input-type=module -e "const m = await import('./scripts/build-inputs.mjs'); m.writeStamp('.', m.inputState('.'))"`,
  ].join(' && ');
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', script], { cwd: work, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (status) => resolve({ status, output }));
  });
}
const cloned = startClone();
/** The published `npx tool-envelope` becomes the clone's linked command. */
const local = (line: string) => line.replace(/^npx (-y )?tool-envelope\b/, 'tool-envelope');

function ok(r: ReturnType<typeof sh>, what: string): string {
  expect(r.status, `${what}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

async function serveUntilBanner(cmd: string): Promise<{ child: ChildProcess; out: () => string; stop: () => void }> {
  // Its own process group, so that stopping it stops what the shell started.
  const child = spawn('sh', ['-c', cmd], { cwd: clone, env: env(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  groups.push(child.pid!);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 120_000;
  while (!out.includes('Press Ctrl-C')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`did not start: ${cmd}\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, out: () => out, stop: () => stopGroup(child.pid!) };
}

async function listToolsOver(transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<string[]> {
  const client = new Client({ name: 'readme', version: '1' });
  await client.connect(transport);
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

/** How each README shell line is run. A line no pattern claims fails the test. */
const SHELL: { pattern: RegExp; run: (line: string) => Promise<void> | void }[] = [
  {
    pattern: /^npm ci && npm test$/,
    run: () => {
      // The suite itself is what is running; in the clone, `npm test` on the conformance oracle proves it
      // tests alone. It uses this run's PostgreSQL server (or none): a second throwaway one could not
      // reach a clone inside this run's private temporary directory.
      const pg = inject('pgUrl');
      const pgEnv = pg ? `TOOL_ENVELOPE_TEST_PG_URL='${pg}'` : 'TOOL_ENVELOPE_TEST_NO_PG=1';
      const out = ok(sh(`${pgEnv} npm test -- test/oracle.test.ts`), 'npm test in the clone');
      expect(out.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(/Test Files\s+1 passed/);
    },
  },
  {
    pattern: /^npm ci && npm start$/,
    run: async () => {
      const script = (JSON.parse(readFileSync(path.join(clone, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
      expect(script).toContain('--http 3333');
      const started = await serveUntilBanner(script.replace('--http 3333', '--http 0').replace('./tool-envelope.db', './start.db'));
      expect(started.out()).toMatch(/MCP endpoint \(Streamable HTTP\): http:\/\/127\.0\.0\.1:\d+\/mcp/);
      started.stop();
    },
  },
  {
    pattern: /^npm ci && npm run build && npm link$/,
    run: () => {
      // The global prefix of this test, not the machine's.
      ok(sh(`npm_config_prefix='${prefix}' npm link`), 'npm link');
      expect(existsSync(path.join(prefix, 'bin/tool-envelope'))).toBe(true);
      // The README's alternative, `npm install -g .`, links the same folder.
      ok(sh(`npm install -g --prefix ${prefix} .`), 'npm install -g .');
    },
  },
  { pattern: /^tool-envelope --help$/, run: (line) => void expect(ok(sh(line), line)).toMatch(/^Usage: tool-envelope <verb>/) },
  {
    pattern: /^npx tool-envelope gateway --dialect mcec -- npx -y @modelcontextprotocol\/server-everything$/,
    run: async (line) => {
      const argv = local(line).split(' ');
      const tools = await listToolsOver(
        new StdioClientTransport({ command: argv[0]!, args: argv.slice(1), cwd: clone, env: env() as Record<string, string>, stderr: 'ignore' }),
      );
      expect(tools).toContain('echo');
    },
  },
  {
    pattern: /^npx tool-envelope gateway --http 3333 --dialect contextos --store \.\/calls\.db -- node my-server\.js$/,
    run: async (line) => {
      const started = await serveUntilBanner(local(line).replace('--http 3333', '--http 0').replace('my-server.js', 'dist/examples/example-server.js'));
      const url = /MCP endpoint.*(http:\/\/\S+)/.exec(started.out())![1]!;
      expect(await listToolsOver(new StreamableHTTPClientTransport(new URL(url)))).toContain('add');
      started.stop();
      expect(existsSync(path.join(clone, 'calls.db'))).toBe(true);
    },
  },
  {
    // Bearer tokens on a non-loopback bind: the token file holds digests only; no token is a 401, the token's principal acts.
    pattern:
      /^npx tool-envelope gateway --http 3333 --host 0\.0\.0\.0 --auth tokens \.\/tokens\.yaml --resource https:\/\/gw\.example\.com\/mcp -- node my-server\.js$/,
    run: async (line) => {
      const token = 'readme-token-0123456789abcdef';
      const digest = createHash('sha256').update(token).digest('hex');
      writeFileSync(path.join(clone, 'tokens.yaml'), `tokens:\n  - sha256: ${digest}\n    principal: user:alice\n    tenant: acme\n`);
      const started = await serveUntilBanner(local(line).replace('--http 3333', '--http 0').replace('my-server.js', 'dist/examples/example-server.js'));
      try {
        const port = /MCP endpoint.*http:\/\/[^:/\s]+:(\d+)\//.exec(started.out())![1]!;
        const url = new URL(`http://127.0.0.1:${port}/mcp`);
        const anonymous = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: '{}',
        });
        expect(anonymous.status).toBe(401);
        const authed = new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } });
        expect(await listToolsOver(authed)).toContain('add');
      } finally {
        started.stop();
      }
    },
  },
  {
    pattern: /^npx tool-envelope audit (list|stats|approvals) --store \.\/tool-envelope\.db( --status error)?$/,
    run: (line) => void ok(sh(local(line)), line),
  },
  {
    pattern: /^npx tool-envelope audit report --store \.\/tool-envelope\.db --html report\.html$/,
    run: (line) => {
      ok(sh(local(line)), line);
      expect(readFileSync(path.join(clone, 'report.html'), 'utf8')).toMatch(/^<!doctype html>/i);
    },
  },
  {
    // A placeholder id: the command parses and answers that no such request exists.
    pattern: /^npx tool-envelope audit approvals approve apr_5f0c\.\.\. --store \.\/tool-envelope\.db$/,
    run: (line) => {
      const r = sh(local(line));
      expect(r.status, r.stderr).toBe(1);
      expect(r.stdout + r.stderr).toMatch(/apr_5f0c\.\.\./);
    },
  },
];

describe('README shell lines and client config, against a fresh clone', () => {
  beforeAll(async () => {
    const { status, output } = await cloned;
    expect(status, `git clone\n${output}`).toBe(0);
  }, 600_000);

  it('every shell line has a handler', () => {
    const unclaimed = shellLines.filter((l) => !SHELL.some((h) => h.pattern.test(l.text)));
    expect(unclaimed.map((l) => `README line ${l.line}: ${l.text}`)).toEqual([]);
    expect(shellLines.length).toBeGreaterThanOrEqual(10);
  });

  it('every shell line runs as the README says', async () => {
    // In README order, so the gateway lines create the store the audit lines read.
    for (const l of shellLines) {
      const handler = SHELL.find((h) => h.pattern.test(l.text));
      if (handler) await handler.run(l.text);
    }
  }, 600_000);

  it('the MCP client config (Claude Desktop) starts the gateway in front of server-memory', async () => {
    const configs = ALL.filter((b) => b.lang === 'json').map((b) => JSON.parse(b.text) as { mcpServers: Record<string, { command: string; args: string[] }> });
    expect(configs.length).toBeGreaterThanOrEqual(1);
    for (const config of configs) {
      for (const server of Object.values(config.mcpServers)) {
        const line = [server.command, ...server.args].join(' ');
        expect(line).toMatch(/^npx -y tool-envelope gateway /);
        const argv = local(line.replace('/Users/me/tool-envelope.db', path.join(work, 'desktop.db'))).split(' ');
        const tools = await listToolsOver(
          new StdioClientTransport({ command: argv[0]!, args: argv.slice(1), cwd: clone, env: env() as Record<string, string>, stderr: 'ignore' }),
        );
        expect(tools).toContain('delete_entities');
      }
    }
  }, 120_000);
});
