// The official MCP conformance suite (@modelcontextprotocol/conformance, its server scenarios, run by
// its own CLI) against a conformance server directly and through the gateway (the built CLI), for each
// dialect and both upstream transports: every check that passes directly passes through the gateway.
// The upstream is test/fixtures/conformance-server.mjs, a v2 SDK server with the tools, resources and
// prompts the scenarios call. The spec versions are a parameter: TOOL_ENVELOPE_CONFORMANCE_SPECS
// (comma-separated, default 2025-11-25, which the suite counts cumulatively: every 2025-06-18 scenario too).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpClient, repoRoot, tempDir } from '../src/mcp/test-support/harness.js';
import { type OracleContract, oracleValidate } from './oracle.js';

const run = promisify(execFile);
const SUITE = join(repoRoot, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SUITE_VERSION: string = JSON.parse(readFileSync(join(repoRoot, 'node_modules/@modelcontextprotocol/conformance/package.json'), 'utf8')).version;
// The suite's bundle needs Node >= 22 for one import its server command never uses; see the fixture.
const NODE20 = join(repoRoot, 'test/fixtures/conformance-node20.mjs');
const SERVER = join(repoRoot, 'test/fixtures/conformance-server.mjs');
const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const DIALECTS = ['mcec', 'dw', 'contextos'] as const;
const SPECS = (process.env.TOOL_ENVELOPE_CONFORMANCE_SPECS ?? '2025-11-25').split(',').map((s) => s.trim());

type Status = 'SUCCESS' | 'FAILURE' | 'WARNING';
/** Per scenario, the worst status of each graded check (INFO lines are the suite's own trace). */
type Results = Map<string, Map<string, Status>>;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGTERM');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function suiteArgs(...args: string[]): string[] {
  return ['--import', NODE20, SUITE, ...args];
}

/** Starts a process and waits for a line of its stdout that `pick` finds a URL in. */
async function startServing(command: string[], pick: (out: string) => string | undefined): Promise<string> {
  const child = spawn(process.execPath, command, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const url = pick(out);
    if (url !== undefined) return url;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${command.join(' ')} did not start:\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const conformanceServer = (): Promise<string> => startServing([SERVER, '--http', '0'], (out) => /"url":"([^"]+)"/.exec(out)?.[1]);

function gateway(dialect: string, upstream: string[]): Promise<string> {
  const dir = tempDir();
  dirs.push(dir);
  const command = [MAIN, 'gateway', '--http', '0', '--dialect', dialect, '--store', join(dir, 'audit.db'), ...upstream];
  return startServing(command, (out) => /MCP endpoint.*?(http:\/\/\S+)/.exec(out)?.[1]);
}

const listed = new Map<string, Promise<string[]>>();
/** The scenarios the suite runs for a spec version, from its own `list`. */
function scenarios(spec: string): Promise<string[]> {
  let names = listed.get(spec);
  if (names === undefined) {
    names = run(process.execPath, suiteArgs('list', '--server', '--spec-version', spec), { cwd: repoRoot }).then(({ stdout }) =>
      [...stdout.matchAll(/^ {2}- (\S+)/gm)].map((m) => m[1]!),
    );
    listed.set(spec, names);
  }
  return names;
}

/** Runs every server scenario of `spec` (the suite "all": active and pending) against `url`, and reads each scenario's checks.json. */
async function runSuite(url: string, spec: string): Promise<Results> {
  const out = tempDir();
  dirs.push(out);
  // The suite exits 1 when any check fails; the checks it saved are the result either way.
  await run(process.execPath, suiteArgs('server', '--url', url, '--suite', 'all', '--spec-version', spec, '-o', out), {
    cwd: repoRoot,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((e: { code?: unknown }) => {
    if (e.code !== 1) throw e;
  });
  const results: Results = new Map();
  for (const entry of readdirSync(out)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    const file = join(out, entry, 'checks.json');
    if (scenario === undefined || !existsSync(file)) continue;
    const checks = new Map<string, Status>();
    for (const c of JSON.parse(readFileSync(file, 'utf8')) as { id: string; status: string }[]) {
      if (c.status !== 'SUCCESS' && c.status !== 'FAILURE' && c.status !== 'WARNING') continue;
      const worst = (['FAILURE', 'WARNING', 'SUCCESS'] as const).find((s) => s === c.status || s === checks.get(c.id))!;
      checks.set(c.id, worst);
    }
    results.set(scenario, checks);
  }
  return results;
}

/** A scenario passes as the suite counts it: it ran and no check failed. */
const passes = (checks: Map<string, Status> | undefined): boolean => checks !== undefined && ![...checks.values()].includes('FAILURE');
const passed = (results: Results, names: string[]): string[] => names.filter((n) => passes(results.get(n)));
const successes = (results: Results): string[] =>
  [...results].flatMap(([scenario, checks]) => [...checks].filter(([, s]) => s === 'SUCCESS').map(([id]) => `${scenario}/${id}`));

describe(`the official conformance suite ${SUITE_VERSION}`, () => {
  it('knows the 2025 spec versions and not yet 2026-07-28 (0.1.x: a 2025-11-25 v1 SDK client; its 2026 scenarios ship in 0.2.0 pre-releases)', async () => {
    expect((await scenarios('2025-11-25')).length).toBeGreaterThan(25);
    const modern = await run(process.execPath, suiteArgs('list', '--server', '--spec-version', '2026-07-28'), { cwd: repoRoot }).then(
      () => 'accepted',
      (e: { code?: unknown; stderr?: string }) => `exit ${e.code}: ${e.stderr}`,
    );
    // When an upgrade of the suite knows the modern era, this fails: add 2026-07-28 to the default SPECS.
    expect(modern).toMatch(/^exit 1: Unknown spec version: 2026-07-28/);
  });
});

describe.each(SPECS)('server scenarios of spec %s, directly and through the gateway', (spec) => {
  // Each dialect in front of a stdio upstream (`-- COMMAND`), and one in front of the Streamable HTTP
  // upstream (`--url`; the dialect and the upstream's transport are independent code paths).
  const upstreams = { stdio: () => ['--', process.execPath, SERVER], http: () => ['--url', upstreamUrl] };
  const cases = [...DIALECTS.map((dialect) => ({ dialect, transport: 'stdio' as const })), { dialect: 'mcec', transport: 'http' as const }];
  let names: string[] = [];
  let direct: Results = new Map();
  let upstreamUrl = '';
  let through: Record<string, Results> = {};
  let endpoints: Record<string, string> = {};
  beforeAll(async () => {
    names = await scenarios(spec);
    upstreamUrl = await conformanceServer();
    direct = await runSuite(upstreamUrl, spec);
    const lines = names.map((n) => `  ${passes(direct.get(n)) ? 'pass' : 'FAIL'}  ${n}  ${JSON.stringify(Object.fromEntries(direct.get(n) ?? []))}`);
    console.log(`conformance ${SUITE_VERSION}, spec ${spec}, directly against the conformance server:\n${lines.join('\n')}`);
    // The gateways run side by side: the suite mostly waits on its scenarios' own pauses.
    const runs = await Promise.all(
      cases.map(async ({ dialect, transport }) => {
        const url = await gateway(dialect, upstreams[transport]());
        return [`${dialect}/${transport}`, url, await runSuite(url, spec)] as const;
      }),
    );
    through = Object.fromEntries(runs.map(([key, , results]) => [key, results]));
    endpoints = Object.fromEntries(runs.map(([key, url]) => [key, url]));
    const summary = runs.map(([key, , results]) => `  ${key}: ${passed(results, names).length}/${names.length} scenarios pass`);
    console.log(`conformance ${SUITE_VERSION}, spec ${spec}, through the gateway (dialect/upstream transport):\n${summary.join('\n')}`);
  }, 240_000);

  it('every scenario passes against the conformance server directly (the baseline is the whole suite)', () => {
    expect(names.filter((n) => !direct.has(n))).toEqual([]);
    expect(names.filter((n) => !passes(direct.get(n)))).toEqual([]);
  });

  it.each(cases)('through the gateway ($dialect, $transport upstream): every scenario and check that passes directly passes', ({ dialect, transport }) => {
    const results = through[`${dialect}/${transport}`]!;
    expect(passed(direct, names).filter((n) => !passes(results.get(n)))).toEqual([]);
    expect(successes(direct).filter((c) => !successes(results).includes(c))).toEqual([]);
  });

  it.each(DIALECTS)('the conformance tools through the gateway (%s): envelopes valid in the published contract, upstream content kept', async (dialect) => {
    const { client: plain } = await httpClient(upstreamUrl);
    const { client } = await httpClient(endpoints[`${dialect}/stdio`]!);
    try {
      const tools = [
        'test_simple_text',
        'test_image_content',
        'test_audio_content',
        'test_embedded_resource',
        'test_multiple_content_types',
        'test_error_handling',
      ];
      for (const name of tools) {
        const own = (await plain.callTool({ name, arguments: {} })) as CallToolResult;
        const wrapped = (await client.callTool({ name, arguments: {} })) as CallToolResult;
        expect(wrapped.content, name).toEqual(own.content);
        expect(oracleValidate(dialect as OracleContract, wrapped.structuredContent), name).toEqual({ valid: true, errors: [] });
        expect(wrapped.isError === true, name).toBe(name === 'test_error_handling');
      }
    } finally {
      await Promise.all([plain.close(), client.close()]);
    }
  });
});
