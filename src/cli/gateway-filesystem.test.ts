/**
 * The README's gateway in front of server-filesystem starts clean: server-filesystem asks its client
 * for roots as soon as it is initialized (before any MCP client is connected to the gateway), and
 * printed `Failed to request initial roots from client: MCP error -32600` at every start while the
 * gateway declared the roots capability upstream. A real gateway process (the sources, through tsx)
 * and the real server-filesystem; an SDK client that declares roots itself.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../mcp/test-support/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'te-gw-fs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FILESYSTEM = join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

describe('gateway in front of server-filesystem', () => {
  it('starts without the roots error and serves the allowed directory', async () => {
    const shared = join(dir, 'shared');
    mkdirSync(shared);
    writeFileSync(join(shared, 'note.txt'), 'hello from the shared directory');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(repoRoot, 'dist/src/cli/main.js'), 'gateway', '--store', join(dir, 'fs.db'), '--', process.execPath, FILESYSTEM, shared],
      cwd: dir,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'fs-roots', version: '1' }, { capabilities: { roots: { listChanged: true } } });
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
    await client.connect(transport);
    try {
      const read = await client.callTool({ name: 'read_text_file', arguments: { path: join(shared, 'note.txt') } });
      expect(JSON.stringify(read.content)).toContain('hello from the shared directory');
      const allowed = await client.callTool({ name: 'list_allowed_directories', arguments: {} });
      expect(JSON.stringify(allowed.content)).toContain(shared);
    } finally {
      await client.close();
    }
    expect(stderr).toContain('Secure MCP Filesystem Server running on stdio');
    expect(stderr).not.toContain('Failed to request initial roots');
    expect(stderr).not.toContain('-32600');
  }, 60_000);
});
