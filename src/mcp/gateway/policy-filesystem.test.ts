// A policy file's prefix rule enforced through the real gateway in front of the reference
// server-filesystem (#38, must hold): a real SDK client over HTTP, a real SQLite store, real files.
// Writes outside /shared are blocked by the policy whether the path says so plainly, through `..`,
// duplicate separators or percent-encoding (nothing is written anywhere). `within` is lexical: a
// symlink inside the prefix that points out of it is refused by server-filesystem itself, given the
// same prefix as its root (it resolves real paths); the policy cannot see the upstream's filesystem.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../test-support/harness.js';
import { type CountingGateway, countingGateway } from '../test-support/counting-gateway.js';

const FILESYSTEM = join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const dir = mkdtempSync(join(tmpdir(), 'te-policy-fs-'));
const shared = join(dir, 'shared');
const other = join(dir, 'other');

let rig: CountingGateway;
let client: Client;
beforeAll(async () => {
  mkdirSync(shared);
  mkdirSync(other);
  symlinkSync(other, join(shared, 'link'));
  const policy = `version: 1
rules:
  - name: writes-stay-in-shared
    match: { tool: [write_file, create_directory, edit_file] }
    when: "!within(args.path, '${shared}')"
    effect: deny
    reason: writes stay under ${shared}
  - { name: writes, match: { tool: [write_file, create_directory, edit_file] }, effect: allow }
`;
  rig = await countingGateway(policy, undefined, { name: 'files', command: process.execPath, args: [FILESYSTEM, shared] });
  client = new Client({ name: 'fs-policy', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(rig.endpoint.url)));
});
afterAll(async () => {
  await client?.close();
  await rig?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function write(path: string): Promise<{ ok: boolean; status?: string; error?: { detail?: string; code?: string } }> {
  return (await client.callTool({ name: 'write_file', arguments: { path, content: 'x' } })).structuredContent as { ok: boolean };
}

describe('a prefix rule in front of server-filesystem', () => {
  it('lets a write under the prefix through', async () => {
    expect((await write(join(shared, 'a.txt'))).ok).toBe(true);
    expect(existsSync(join(shared, 'a.txt'))).toBe(true);
  });

  it('blocks writes outside it: plainly, through .., duplicate separators and percent-encoding', async () => {
    const outside = [
      join(other, 'b.txt'),
      `${shared}/../other/c.txt`,
      `${shared}//..//other/d.txt`,
      `${shared}/./sub/../../other/e.txt`,
      `${shared}/%2e%2e/other/f.txt`,
      `${shared}/%2E%2E%2Fother%2Fg.txt`,
      `${dir}/shared-not/h.txt`,
    ];
    for (const path of outside) {
      const r = await write(path);
      expect(r, path).toMatchObject({ ok: false, error: { detail: `Blocked by policy: writes stay under ${shared}` } });
    }
    // Nothing was written anywhere: the upstream never got the calls.
    expect(readdirSync(other)).toEqual([]);
    expect(readdirSync(shared).sort()).toEqual(['a.txt', 'link']);
    expect(existsSync(join(dir, 'shared-not'))).toBe(false);
  });

  it('a symlink under the prefix that points out of it: allowed by the lexical rule, refused by the upstream, nothing written', async () => {
    const r = await write(join(shared, 'link', 'i.txt'));
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).not.toContain('Blocked by policy');
    expect(JSON.stringify(r)).toMatch(/outside allowed directories/);
    expect(readdirSync(other)).toEqual([]);
  });
});
