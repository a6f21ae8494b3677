// An upstream that fails to start or exits is heard: the last lines of its stderr reach the
// gateway's log, and the reason (how it ended, its key stderr line) reaches the envelope, instead
// of the SDK's bare `Connection closed`. Real processes, the real SDK client.
import { afterEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import { contracts } from '../../core/contracts/registry.js';
import { run } from '../../cli/gateway.js';
import { Gateway } from '../gateway/gateway.js';
import { keyLine } from './stderr-tail.js';
import { clientFor, faultSpec, silent, tempDir } from '../test-support/harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe("the upstream's voice", () => {
  it('an upstream that fails to start: its exit code and error line in the error, its stderr tail in the log', async () => {
    const log: string[] = [];
    const started = Gateway.start({ upstreams: [faultSpec({}, ['--needs-database'])], log: (l) => log.push(l) });
    await expect(started).rejects.toThrow(/failed to start: it exited with code 1; its stderr: Error: DATABASE_URL is not set/);
    const tail = log.find((l) => l.includes('its last stderr lines'));
    // Node's own report of the uncaught error: the source line, the error, its stack, the Node version.
    expect(tail).toContain('  | fault-server starting\n');
    expect(tail).toMatch(/\n {2}\| Error: DATABASE_URL is not set\n {2}\| {5}at /);
    expect(log.join('\n')).not.toMatch(/Connection closed/);
  });

  it('an upstream that never answers: the wait is named, not the SIGTERM the gateway sent itself', async () => {
    const started = performance.now();
    const gateway = Gateway.start({
      upstreams: [{ name: 'hung', command: 'sh', args: ['-c', 'sleep 100'] }],
      log: silent,
      supervision: { connectTimeoutMs: 1_000 },
    });
    const err = await gateway.then(
      () => '',
      (e: Error) => e.message,
    );
    // The 2026-07-28 probe (3 s) and initialize (1 s here).
    expect(err).toMatch(/^Upstream 'hung' failed to start: it did not answer initialize within \d+ s; it wrote nothing to stderr$/);
    expect(performance.now() - started).toBeLessThan(8_000);
  });

  it('an upstream that writes lines that are not JSON-RPC: said, with the start of the first one made inert', async () => {
    const log: string[] = [];
    const gateway = Gateway.start({
      upstreams: [{ name: 'noisy', command: 'sh', args: ['-c', `printf '\\033[2J\\033]0;pwned\\007 ready on port 3000\\n'; yes garbage`] }],
      log: (l) => log.push(l),
      supervision: { connectTimeoutMs: 1_000 },
    });
    const err = await gateway.then(
      () => '',
      (e: Error) => e.message,
    );
    // How long: the probe and initialize, later when the flood of lines holds the event loop.
    expect(err.replace(/within \d+ s/, 'within N s')).toBe(
      "Upstream 'noisy' failed to start: it did not answer initialize within N s; it wrote lines to stdout that are not JSON-RPC, the first: " +
        '"\\u001b[2J\\u001b]0;pwned\\u0007 ready on port 3000"; it wrote nothing to stderr',
    );
    expect(err).not.toMatch(/closed its stdout|timed out/);
    // Nothing the upstream wrote reaches the log with its control characters.
    expect(log.join('\n')).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(log.some((l) => l.includes('protocol error: '))).toBe(true);
  });

  it('the key line of a stderr tail is its first error line', () => {
    expect(
      keyLine([
        'npm error code E404',
        'npm error 404 Not Found - GET https://registry.npmjs.org/@x%2fy',
        'npm error A complete log of this run can be found in: /root/.npm/_logs/x.log',
      ]),
    ).toBe('npm error code E404');
    expect(keyLine(['listening', 'bye'])).toBe('bye');
    expect(keyLine([])).toBeUndefined();
  });

  it('a command that does not exist says so', async () => {
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (d: Buffer) => (err += d.toString()));
    const io = { stdin: new PassThrough(), stdout: new PassThrough(), stderr, cwd: tempDir(), env: {}, signal: new AbortController().signal };
    expect(await run(['--no-store', '--', '/nonexistent/upstream'], io)).toBe(2);
    expect(err).toMatch(/failed to start: the command was not found \(spawn \/nonexistent\/upstream ENOENT\)/);
  });

  it.each(['mcec', 'dw', 'contextos'] as const)('an upstream that exits mid-call: the envelope says how and what it said last (%s)', async (dialect) => {
    const log: string[] = [];
    const gw = await Gateway.start({
      upstreams: [faultSpec()],
      dialect,
      log: (l) => log.push(l),
      supervision: { restartInitialDelayMs: 50, healthIntervalMs: 0 },
    });
    cleanups.push(() => gw.close());
    const client = await clientFor(gw.createServer());
    cleanups.push(() => client.close());
    const r = (await client.callTool({ name: 'exit', arguments: {} })) as CallToolResult;
    expect(oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, r.structuredContent).errors).toEqual([]);
    const outcome = contracts[dialect].decode(r.structuredContent);
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'upstream-exited' });
    expect(outcome.error!.detail).toBe("Upstream 'fault' is gone during the call: it exited with code 3; its stderr: fatal: the cache is gone.");
    if (dialect !== 'mcec') {
      expect(outcome.error!.retryable).toBe(true);
      expect(outcome.error!.details).toMatchObject({ upstream: 'fault', stderr: ['fatal: the cache is gone'] });
    }
    expect(log.some((l) => l.includes('connection closed: it exited with code 3'))).toBe(true);
    // And it is restarted as before.
    expect(((await client.callTool({ name: 'echo', arguments: { text: 'back' } })) as CallToolResult).content).toEqual([{ type: 'text', text: 'back' }]);
  });
});
