// `npm start` from a built tree: the gateway over Streamable HTTP in front of the bundled
// example server, on a SQLite store, answering a real SDK client; plus the verb's usage errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../test/oracle.js';
import { contracts } from '../core/contracts/registry.js';
import { readToolResult } from '../mcp/reader.js';
import { httpClient, repoRoot, tempDir } from '../mcp/test-support/harness.js';
import { openStore } from '../store/index.js';
import { tokenDigest } from '../mcp/serve/auth.js';
import { run } from './gateway.js';
import { parseGatewayConfig } from '../mcp/gateway/config.js';
import { parse as parseYaml } from 'yaml';
import { memoryIo } from './test-support/memory-io.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const EXAMPLE = join(repoRoot, 'dist/examples/example-server.js');

function startCommand(port: string, store: string): string[] {
  // The command `npm start` runs after building, with a free port and a temporary store.
  const script = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const command = script.split('&&').pop()!.trim().split(/\s+/);
  return command.map((a, i) => (command[i - 1] === '--http' ? port : command[i - 1] === '--store' ? store : a));
}

function launch(args: string[], cwd: string): { child: ChildProcess; stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  const child = spawn(args[0]!, args.slice(1), { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, INIT_CWD: cwd } });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stdout: () => out, stderr: () => err };
}

describe('npm start (from a built tree)', () => {
  let dir: string;
  let proc: ReturnType<typeof launch>;
  let url: string;

  beforeAll(async () => {
    if (!existsSync(MAIN) || !existsSync(EXAMPLE)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    dir = tempDir();
    const cmd = startCommand('0', join(dir, 'tool-envelope.db'));
    expect(cmd.slice(0, 3)).toEqual(['node', 'dist/src/cli/main.js', 'gateway']);
    const dash = cmd.indexOf('--');
    proc = launch([process.execPath, ...cmd.slice(1, dash), '--deadline', '1000', ...cmd.slice(dash)], dir);
    const deadline = Date.now() + 20_000;
    while (!/MCP endpoint.*(http:\/\/\S+)/.test(proc.stdout())) {
      if (Date.now() > deadline || proc.child.exitCode !== null) throw new Error(`gateway did not start: ${proc.stderr()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    url = /MCP endpoint.*(http:\/\/\S+)/.exec(proc.stdout())![1]!;
  });
  afterAll(() => {
    proc?.child.kill('SIGKILL');
  });

  it('prints where to connect and where the audit log is', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(proc.stdout()).toContain(`audit log: ${join(dir, 'tool-envelope.db')}`);
    expect(proc.stdout()).toContain('Ctrl-C');
  });

  it('answers a real SDK client with envelopes for tools that succeed, warn, fail, time out and return large output', async () => {
    const { client } = await httpClient(url);
    const call = async (name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> => {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(oracleValidate('mcec', r.structuredContent).errors).toEqual([]);
      expect(r.isError).toBe(!(contracts.mcec.decode(r.structuredContent).status === 'ok'));
      return r;
    };
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual(['add', 'delete_item', 'large_report', 'list_items', 'read_config', 'sleep', 'tiny_image']);

    expect(readToolResult(await call('add', { a: 2, b: 3 })).result).toEqual({ sum: 5 });
    const warned = readToolResult(await call('list_items', { query: 'a' }));
    expect(warned.warnings).toEqual([{ code: 'results-truncated', detail: 'Only 3 of 4 items were returned.' }]);
    // A plain ENOENT text is classified by the shipped plain-failure rules (issue #16).
    expect(readToolResult(await call('read_config')).error).toMatchObject({ category: 'no-target', code: 'not-found' });
    expect(readToolResult(await call('sleep', { ms: 10_000 })).error).toMatchObject({ category: 'timeout', code: 'upstream-timeout' });
    const large = await call('large_report', { bytes: 1_000_000 });
    expect((large.content[0] as { text: string }).text).toHaveLength(1_000_000);
    expect((readToolResult(large).result as { text: string }).text).toHaveLength(1_000_000);
    const image = await call('tiny_image');
    expect(image.content[0]).toMatchObject({ type: 'image', mimeType: 'image/png' });
    await client.close();
  });

  it('records every call in the SQLite audit log, and stops cleanly on SIGINT', async () => {
    proc.child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => proc.child.once('exit', (c) => r(c)));
    expect(code).toBe(0);
    const store = await openStore(join(dir, 'tool-envelope.db'));
    try {
      const { records } = await store.listAudit({}, { order: 'asc' });
      expect(records.map((r) => r.tool)).toEqual(['add', 'list_items', 'read_config', 'sleep', 'large_report', 'tiny_image']);
      expect(records.map((r) => r.errorCode)).toEqual([null, null, 'not-found', 'upstream-timeout', null, null]);
      for (const r of records) expect(oracleValidate('contextos-result', r.resultEnvelope).errors).toEqual([]);
      for (const r of records) expect(oracleValidate('contextos-call', r.callEnvelope).errors).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe('gateway verb usage errors', () => {
  it.each([
    [[], /exactly one upstream/],
    [['--dialect', 'xml', '--', 'node', 'x.js'], /--dialect must be/],
    [['--http', 'abc', '--', 'node', 'x.js'], /--http must be/],
    [['--mode', 'write', '--', 'node', 'x.js'], /--mode expects TOOL=MODE/],
    [['--mode', 'write=admin', '--', 'node', 'x.js'], /--mode expects TOOL=MODE/],
    [['--bogus', '--', 'node', 'x.js'], /unknown option '--bogus'/],
    [['--url', 'http://127.0.0.1:1/mcp', '--', 'node', 'x.js'], /exactly one upstream/],
    // A non-loopback bind without authentication refuses to start (unless --insecure-no-auth).
    [['--http', '0', '--host', '0.0.0.0', '--', 'node', 'x.js'], /reachable from other machines: give --auth tokens FILE or --auth oauth/],
    [['--http', '0', '--auth', 'tokens', '--', 'node', 'x.js'], /--auth tokens needs a FILE/],
    [['--http', '0', '--auth', 'tokens', '/nonexistent/tokens.yaml', '--', 'node', 'x.js'], /cannot read the tokens file/],
    [['--http', '0', '--auth', 'oauth', '--', 'node', 'x.js'], /--auth oauth needs --oauth-issuer/],
    [['--http', '0', '--auth', 'kerberos', '--', 'node', 'x.js'], /--auth expects tokens FILE or oauth/],
    [['--auth', 'oauth', '--oauth-issuer', 'http://127.0.0.1:1', '--resource', 'http://127.0.0.1/mcp', '--', 'node', 'x.js'], /--auth applies to --http/],
    // The console's OpenID Connect flags, checked as the console verb's; they need --console.
    [['--http', '0', '--console', '--oidc-issuer', 'https://id.example.com', '--', 'node', 'x.js'], /--oidc-issuer and --oidc-client-id go together/],
    [['--http', '0', '--console', '--oidc-issuer', 'id.example.com', '--oidc-client-id', 'te', '--', 'node', 'x.js'], /--oidc-issuer must be an http\(s\) URL/],
    [['--http', '0', '--console', '--public-url', 'console.example.com', '--', 'node', 'x.js'], /--public-url must be an http\(s\) URL/],
    [
      ['--http', '0', '--oidc-issuer', 'https://id.example.com', '--oidc-client-id', 'te', '--', 'node', 'x.js'],
      /--oidc-issuer and --public-url apply to --console/,
    ],
    [['--http', '0', '--trust-proxy', '127.0.0.1/32', '--', 'node', 'x.js'], /--trust-proxy applies to --console/],
    [['--http', '0', '--console', '--trust-proxy', '127.0.0.1/32,nginx', '--', 'node', 'x.js'], /--trust-proxy: .*got 'nginx'/],
    [['--http', '0', '--console', '--trust-proxy', '10.0.0.0/33', '--', 'node', 'x.js'], /--trust-proxy: .*got '10\.0\.0\.0\/33'/],
  ])('%j', async (args, message) => {
    const io = memoryIo();
    expect(await run(args as string[], io)).toBe(2);
    expect(io.err()).toMatch(message);
  });

  it.each([
    [
      'tokens:\n  - { sha256: %D, principal: "user:al", role: [approver] }\n',
      /tokens\.yaml: tokens\[0\]\.role: unknown key \(expected one of sha256, principal, tenant, roles, claims\) \(did you mean 'roles'\?\)/,
    ],
    ['tokens:\n  - { sha256: %D, principal: "user:al", tennant: acme }\n', /tokens\[0\]\.tennant: unknown key .* \(did you mean 'tenant'\?\)/],
    ['tokns: []\ntokens:\n  - { sha256: %D, principal: "user:al" }\n', /tokens\.yaml: tokns: unknown key \(expected tokens\) \(did you mean 'tokens'\?\)/],
    ['tokens:\n  - { sha256: %D, principal: "user:al", zzzzzz: 1 }\n', /tokens\[0\]\.zzzzzz: unknown key \(expected one of [^)]*\)$/m],
  ])('a key of the tokens file it does not know is refused: %j', async (text, message) => {
    const io = memoryIo();
    writeFileSync(join(io.cwd, 'tokens.yaml'), text.replace('%D', tokenDigest('t')));
    expect(await run(['--http', '0', '--auth', 'tokens', join(io.cwd, 'tokens.yaml'), '--', 'node', 'x.js'], io)).toBe(2);
    expect(io.err()).toMatch(message);
  });

  // A file is hostile: a key it names is quoted in the error, and must not drive the terminal.
  it.each([
    ['tokens', 'tokens:\n  - { sha256: %D, principal: "user:al", "\\e[2J\\e]0;owned\\a\\u202Erole": [x] }\n'],
    ['config', '"\\e[2J\\e]0;owned\\a\\u202Epolcy": x\nupstreams: [{ command: node }]\n'],
  ])('an unknown key with terminal escapes in a %s file is quoted inert', async (kind, text) => {
    const io = memoryIo();
    writeFileSync(join(io.cwd, 'f.yaml'), text.replace('%D', tokenDigest('t')));
    const args = kind === 'tokens' ? ['--auth', 'tokens', join(io.cwd, 'f.yaml'), '--', 'node', 'x.js'] : ['--config', join(io.cwd, 'f.yaml')];
    expect(await run(['--no-store', '--http', '0', ...args], io)).toBe(2);
    const err = io.err();
    expect(err).toMatch(/\?\[2J\?\]0;owned\?\?(role|polcy): unknown key/);
    expect(err).not.toMatch(/[\u001b\u0007\u202e]/);
  });

  // The yaml library builds documents recursively: deep enough text overflowed its stack.
  it.each([
    ['config', (t: string) => ['--config', t]],
    ['tokens', (t: string) => ['--auth', 'tokens', t, '--', 'node', 'x.js']],
  ])('a %s file nested thousands deep is refused as too deep, not a stack overflow', async (_kind, args) => {
    const io = memoryIo();
    const file = join(io.cwd, 'deep.yaml');
    writeFileSync(file, `tokens: ${'['.repeat(5000)}${']'.repeat(5000)}\n`);
    expect(await run(['--no-store', '--http', '0', ...args(file)], io)).toBe(2);
    expect(io.err()).toMatch(/deep\.yaml: line 1, column \d+: \/tokens(\/0)+ nests deeper than 64 levels/);
    expect(io.err()).not.toMatch(/call stack/);
  });

  it('an empty tokens list is refused: nobody could authenticate', async () => {
    const io = memoryIo();
    writeFileSync(join(io.cwd, 'tokens.yaml'), 'tokens: []\n');
    expect(await run(['--http', '0', '--auth', 'tokens', join(io.cwd, 'tokens.yaml'), '--', 'node', 'x.js'], io)).toBe(2);
    expect(io.err()).toMatch(/tokens\.yaml: tokens is empty: with no token nobody could authenticate/);
  });

  it('a tokens file with a plain token instead of its digest is refused', async () => {
    const io = memoryIo();
    const file = join(io.cwd, 'tokens.yaml');
    writeFileSync(file, 'tokens:\n  - sha256: my-secret-token\n    principal: user:alice\n');
    expect(await run(['--http', '0', '--auth', 'tokens', file, '--', 'node', 'x.js'], io)).toBe(2);
    expect(io.err()).toMatch(/sha256 must be the hex SHA-256 of the token/);
  });

  it("a config file's upstream url that is not a URL is named with its password and query secrets hidden", async () => {
    const io = memoryIo();
    const file = join(io.cwd, 'gw.yaml');
    writeFileSync(file, "upstreams:\n  - url: 'http://bob:s3cretPW@exa mple.com/mcp?token=abc123secret&page=2'\n");
    expect(await run(['--no-store', '--http', '0', '--config', file], io)).toBe(2);
    expect(io.err()).toContain("upstreams[0].url: 'http://bob:***@exa mple.com/mcp?token=[REDACTED]&page=2' is not a URL");
    expect(io.err()).not.toMatch(/s3cretPW|abc123secret/);
  });

  it('a store file others can read is warned of as the gateway, before its fatal error, without a Node warning', async () => {
    const io = memoryIo();
    const file = join(io.cwd, 'garbage.db');
    writeFileSync(file, 'not a database, '.repeat(512));
    chmodSync(file, 0o644);
    expect(await run(['--http', '0', '--store', file, '--', 'node', 'x.js'], io)).toBe(2);
    const err = io.err();
    expect(err).toContain(`tool-envelope gateway: warning: ${file} has mode 0644: group or others can read it (chmod 600 ${file})`);
    expect(err.indexOf('warning:')).toBeLessThan(err.indexOf('cannot open the store'));
    expect(err).not.toContain('--trace-warnings');
  });

  it('a bad config file is a clear usage error', async () => {
    const io = memoryIo();
    const file = join(io.cwd, 'gw.yaml');
    writeFileSync(file, 'upstreams:\n  - name: a\n    command: node\n    modes: { x: admin }\n');
    expect(await run(['--config', file], io)).toBe(2);
    expect(io.err()).toMatch(/upstreams\[0\]\.modes\.x: 'admin' is not an approval mode/);
  });

  // `policy check` and a reload refuse it: a restart must not put it in force either.
  it('a --policy whose own test cases fail is refused at start, worded as policy check words it', async () => {
    const io = memoryIo();
    const file = join(io.cwd, 's1.yaml');
    writeFileSync(
      file,
      'version: 1\ndefault: deny\nrules:\n  - name: reads\n    match: { tool: list_items }\n    effect: allow\ntests:\n  - name: add runs\n    call: { tool: add, mode: read_only }\n    expect: allow\n',
    );
    expect(await run(['--no-store', '--http', '0', '--policy', file, '--', process.execPath, EXAMPLE], io)).toBe(2);
    expect(io.err()).toContain(`${file}: 1 of its test cases fail: /tests/0 add runs: expected allow, got deny: no rule matched: default deny`);
    expect(io.out()).toBe('');
  }, 15_000);

  // A misspelt key ignored would start the gateway without the policy, redaction or mode it names.
  it.each([
    [
      'polcy: ./deny.yaml\nupstreams: [{ command: node }]\n',
      /gw\.yaml\.polcy: unknown key \(expected one of upstreams, .*policy.*\) \(did you mean 'policy'\?\)/,
    ],
    ['redcat: { add: [/args/a] }\nupstreams: [{ command: node }]\n', /gw\.yaml\.redcat: unknown key .*\(did you mean 'redact'\?\)/],
    [
      'upstreams:\n  - command: node\n    mdoes: { add: destructive }\n',
      /gw\.yaml\.upstreams\[0\]\.mdoes: unknown key \(expected one of name, .*modes.*\) \(did you mean 'modes'\?\)/,
    ],
    ['upstreams:\n  - comand: node\n', /gw\.yaml\.upstreams\[0\]\.comand: unknown key .*\(did you mean 'command'\?\)/],
    ['upstreams:\n  - command: node\n    headers: { a: b }\n', /upstreams\[0\]\.headers: applies to a `url` upstream, not a `command` one/],
    ['upstreams:\n  - url: http://127.0.0.1:1/mcp\n    args: [x]\n', /upstreams\[0\]\.args: applies to a `command` upstream, not a `url` one/],
    ['upstreams: [{ command: node }]\nzzzzzz: 1\n', /gw\.yaml\.zzzzzz: unknown key \(expected one of [^)]*\)$/m],
  ])('a config file key the gateway does not know is refused: %j', async (text, message) => {
    const io = memoryIo();
    writeFileSync(join(io.cwd, 'gw.yaml'), text);
    expect(await run(['--no-store', '--http', '0', '--config', join(io.cwd, 'gw.yaml')], io)).toBe(2);
    expect(io.err()).toMatch(message);
    expect(io.out()).toBe('');
  });

  it("docs/mcp.md's config example loads (every key it shows is known)", () => {
    const doc = readFileSync(join(repoRoot, 'docs/mcp.md'), 'utf8');
    const block = /## Config file \(JSON or YAML\)\n\n```yaml\n([\s\S]*?)```/.exec(doc)![1]!;
    const dir = tempDir();
    writeFileSync(join(dir, 'fs-rules.yaml'), 'format: tool-envelope/plain-failure-rules@1\nrules: []\n');
    const config = parseGatewayConfig(parseYaml(block), dir, 'mcp.md');
    expect(config.upstreams.map((u) => u.name)).toEqual(['fs', 'remote']);
    expect(config.policy).toBe(join(dir, 'policy.yaml'));
  });

  it('an upstream that cannot start is a clear error, not a crash', async () => {
    const io = memoryIo();
    expect(await run(['--no-store', '--', '/nonexistent/upstream'], io)).toBe(2);
    expect(io.err()).toMatch(/failed to start/);
  });
});

describe('names that match nothing, told at start', () => {
  it('a misspelt console role in the tokens file and modes naming no listed tool are warned of; the gateway starts', async () => {
    if (!existsSync(EXAMPLE)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    const io = memoryIo();
    writeFileSync(
      join(io.cwd, 'tokens.yaml'),
      `tokens:\n  - { sha256: ${tokenDigest('t1')}, principal: "user:al", roles: [aprover, research] }\n  - { sha256: ${tokenDigest('t2')}, principal: "user:bo", roles: [admin] }\n`,
    );
    writeFileSync(
      join(io.cwd, 'gw.yaml'),
      `modes: { typo_tool: destructive }\nupstreams:\n  - name: ex\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EXAMPLE)}]\n    modes: { delet_item: destructive, delete_item: destructive }\n`,
    );
    const args = [
      '--no-store',
      '--http',
      '0',
      '--auth',
      'tokens',
      'tokens.yaml',
      '--config',
      'gw.yaml',
      '--mode',
      'lst_items=read_only',
      '--mode',
      'add=read_only',
    ];
    const running = run(args, io);
    const deadline = Date.now() + 20_000;
    while (!io.out().includes('MCP endpoint')) {
      if (Date.now() > deadline) throw new Error(`gateway did not start: ${io.err()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    io.abort();
    await running;
    const warnings = io
      .err()
      .split('\n')
      .filter((l) => l.includes('WARNING'));
    expect(warnings).toEqual([
      "tool-envelope gateway: WARNING: tokens.yaml: role 'aprover' is not a console role (viewer, approver, admin): did you mean 'approver'? (kept as written: policy conditions may test any role)",
      "tool-envelope gateway: WARNING: the modes (--mode, the config file) name tool 'typo_tool', which no upstream lists: it sets no mode",
      "tool-envelope gateway: WARNING: the modes (--mode, the config file) name tool 'lst_items', which no upstream lists (nearest: 'list_items'): it sets no mode",
      "tool-envelope gateway: WARNING: the modes of upstream 'ex' name tool 'delet_item', which it does not list (nearest: 'delete_item'): it sets no mode",
    ]);
  });
});
