// The gateway's start banner as the README describes it: which tools pause for an approver and how
// to release them, followed to the letter against the reference server-memory, with the store
// taken from TOOL_ENVELOPE_STORE.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { EXAMPLE_TS, FAULT, MEMORY, TSX, httpClient, repoRoot, tempDir } from '../../mcp/test-support/harness.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function startGateway(
  env: NodeJS.ProcessEnv,
  upstream: string[],
  flags: string[] = [],
  main = [MAIN],
): Promise<{ banner: string; url: string; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    [...main, 'gateway', '--http', '0', '--approval-poll', '100', ...flags, ...(upstream.length ? ['--', ...upstream] : [])],
    {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const deadline = Date.now() + 30_000;
  while (!out.includes('Press Ctrl-C')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { banner: out, url: /MCP endpoint.*(http:\/\/\S+)/.exec(out)![1]!, stderr: () => err };
}

/** The built example server (delete_item is destructive). */
const EXAMPLE = [process.execPath, join(repoRoot, 'dist/examples/example-server.js')];

describe('the gateway banner', () => {
  it('names the destructive tools that pause, and its release commands work as printed', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const store = join(dir, 'env-store.db');
    // The calls act for alice; the OS user running the CLI releases them (an approver outside the call's chain).
    const { banner, url } = await startGateway(
      { TOOL_ENVELOPE_STORE: store, MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
      [process.execPath, MEMORY],
      ['--principal', 'user:alice'],
    );
    expect(banner).toContain('may not be user:alice, who the calls act for');
    // TOOL_ENVELOPE_STORE is the gateway's store when --store is not given.
    expect(banner).toContain(`audit log: ${store}  (tool-envelope audit list --store ${store})`);
    expect(banner).toContain(
      'Destructive tools pause for an approver (the default policy; --policy to change it): delete_entities, delete_observations, delete_relations',
    );
    const release = /release a paused call: tool-envelope (audit approvals --store \S+)\s+then\s+tool-envelope (audit approvals approve ID --store \S+)/.exec(
      banner,
    );
    expect(release).not.toBeNull();

    const { client } = await httpClient(url);
    await client.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'old', entityType: 'note', observations: ['x'] }] } });
    const paused = (await client.callTool({ name: 'delete_entities', arguments: { entityNames: ['old'] } })) as CallToolResult;
    expect(oracleValidate('mcec', paused.structuredContent).valid).toBe(true);
    expect(paused.isError).toBe(true);
    expect(JSON.stringify(paused.structuredContent)).toContain('elevation');

    const cli = (command: string) =>
      spawnSync(process.execPath, [MAIN, ...command.split(' ')], { encoding: 'utf8', env: { ...process.env, TOOL_ENVELOPE_STORE: '' } });
    const list = cli(release![1]!);
    expect(list.status).toBe(0);
    const id = /\b(apr_\S+)/.exec(list.stdout)?.[1];
    expect(id, list.stdout).toBeDefined();
    const approved = cli(`${release![2]!.replace('ID', id!)} --wait 30`);
    expect(approved.stderr).toBe('');
    expect(approved.status).toBe(0);
    expect(approved.stdout).toContain(`${id}: completed`);
    const graph = (await client.callTool({ name: 'read_graph', arguments: {} })) as CallToolResult;
    expect(JSON.stringify(graph.structuredContent)).not.toContain('"old"');
    await client.close();
  }, 90_000);

  it('with --policy, names the tools the policy pauses (always, or depending on the arguments), and the calls do as it says', async () => {
    const dir = tempDir();
    dirs.push(dir);
    writeFileSync(
      join(dir, 'policy.yaml'),
      [
        'version: 1',
        'rules:',
        '  - name: creating-pauses',
        '    match: { tool: create_entities }',
        '    effect: require-approval',
        '  - name: deletes-run',
        '    match: { tool: [delete_entities, delete_observations] }',
        '    effect: allow',
        '  - name: many-relations',
        '    match: { tool: create_relations }',
        '    when: "size(args.relations) > 10"',
        '    effect: require-approval',
        '',
      ].join('\n'),
    );
    // From the sources (tsx's loader in the gateway's own process: its CLI would start a second one,
    // which the SIGKILL at the end would leave running), with a real policy file and server-memory as the upstream.
    const { banner, url } = await startGateway(
      { TOOL_ENVELOPE_STORE: join(dir, 'policy.db'), MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
      [process.execPath, MEMORY],
      ['--principal', 'user:alice', '--policy', join(dir, 'policy.yaml')],
      ['--import', 'tsx', join(repoRoot, 'src/cli/main.ts')],
    );
    // delete_relations matches no rule: the built-in default pauses it (destructive).
    expect(banner).toContain(`Tools that pause for an approver (the policy ${join(dir, 'policy.yaml')}): create_entities, delete_relations`);
    expect(banner).toContain(
      `Tools that may pause, depending on the call's arguments (a 'when' condition of the policy ${join(dir, 'policy.yaml')}): create_relations`,
    );
    expect(banner).not.toContain('Destructive tools pause');
    expect(banner).toMatch(/release a paused call: tool-envelope audit approvals --store \S+/);
    const { client } = await httpClient(url);
    const created = (await client.callTool({
      name: 'create_entities',
      arguments: { entities: [{ name: 'a', entityType: 'note', observations: [] }] },
    })) as CallToolResult;
    expect(JSON.stringify(created.structuredContent)).toContain('approval-required');
    const deleted = (await client.callTool({ name: 'delete_entities', arguments: { entityNames: ['a'] } })) as CallToolResult;
    expect(deleted.isError).not.toBe(true);
    const removed = (await client.callTool({ name: 'delete_relations', arguments: { relations: [] } })) as CallToolResult;
    expect(JSON.stringify(removed.structuredContent)).toContain('approval-required');
    await client.close();
  }, 90_000);

  it('says nothing about approvals when no tool is destructive', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const { banner } = await startGateway({ TOOL_ENVELOPE_STORE: join(dir, 'faults.db') }, [process.execPath, FAULT]);
    expect(banner).not.toContain('Destructive tools');
    expect(banner).toContain('audit log: ');
  }, 60_000);

  it("names the bundled example server's one destructive tool, delete_item, as the quick start's pausing tool", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const { banner } = await startGateway({ TOOL_ENVELOPE_STORE: join(dir, 'example.db') }, [process.execPath, TSX, EXAMPLE_TS]);
    expect(banner).toMatch(/Destructive tools pause for an approver[^\n]*: delete_item\b/);
  }, 60_000);

  it("an upstream URL's password and query-string secrets are not shown, in the banner or the log", async () => {
    const { url: inner } = await startGateway({}, EXAMPLE, ['--no-store']);
    const secretUrl = inner.replace('http://', 'http://bob:s3cretPW@') + '?token=abc123secret&sig=sas-signature&page=2';
    const { banner, stderr } = await startGateway({}, [], ['--no-store', '--log-format', 'json', '--url', secretUrl]);
    const port = new URL(inner).port;
    expect(banner).toContain(`tool-envelope gateway (mcec) in front of upstream http://bob:***@127.0.0.1:${port}/mcp?token=[REDACTED]&sig=[REDACTED]&page=2\n`);
    expect(banner + stderr()).not.toMatch(/s3cretPW|abc123secret|sas-signature/);
  }, 60_000);

  it('with --no-store the approvals are in memory: the banner says only the console releases them, or nothing does', async () => {
    const { banner } = await startGateway({}, EXAMPLE, ['--no-store']);
    expect(banner).toContain('audit log: off (--no-store)');
    expect(banner).toMatch(/Destructive tools pause for an approver[^\n]*: delete_item\n/);
    expect(banner).toContain(
      "  paused calls cannot be released, only expire (--approval-ttl): with --no-store the approvals are held in this process's memory, out of reach of 'tool-envelope audit approvals'; give --console to release them in this gateway's console, or --store FILE\n",
    );
    expect(banner).not.toContain('audit approvals approve ID');

    const withConsole = await startGateway({}, EXAMPLE, ['--no-store', '--console']);
    const consoleUrl = /Console: (\S+)/.exec(withConsole.banner)![1]!;
    expect(withConsole.banner).toContain(
      `  release a paused call: in this gateway's console only, ${consoleUrl}: with --no-store the approvals are held in this process's memory, out of reach of 'tool-envelope audit approvals' (give --store FILE for that)\n`,
    );
    expect(withConsole.banner).toContain("the approver is the console's operator");
  }, 60_000);

  it('the memory store: no audit list hint (another process sees an empty store), and the approvals are said to be in memory', async () => {
    const { banner } = await startGateway({}, EXAMPLE, ['--store', 'memory']);
    expect(banner).toContain("audit log: in this process's memory (--store memory), gone when it stops; --store FILE to keep it\n");
    expect(banner).not.toContain('audit list --store memory');
    expect(banner).toContain(
      "paused calls cannot be released, only expire (--approval-ttl): with --store memory the approvals are held in this process's memory",
    );
  }, 60_000);

  it('a --metrics port that is taken: the error, and no banner before it', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const port = (busy.address() as AddressInfo).port;
      const r = spawnSync(process.execPath, [MAIN, 'gateway', '--http', '0', '--no-store', '--metrics', `127.0.0.1:${port}`, '--', ...EXAMPLE], {
        cwd: repoRoot,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status, `${r.stdout}${r.stderr}${r.error}`).toBe(2);
      expect(r.stderr).toMatch(/--metrics: listen EADDRINUSE/);
      expect(r.stdout).toBe('');
    } finally {
      busy.close();
    }
  }, 60_000);
});
