// The gateway's command line refused before anything starts: a negative number is its flag's value
// (said wrong by the flag's own check, not "needs a value"), a port out of range, a store location
// with a scheme no store has, an empty one, a duration longer than a timer can wait.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../gateway.js';
import { memoryIo } from '../test-support/memory-io.js';

describe('gateway flags refused before anything starts', () => {
  it.each([
    [['--deadline', '-5', '--', 'node', 'x.js'], /^tool-envelope gateway: --deadline must be a positive integer, got '-5'$/m],
    [['--approval-ttl', '-1', '--', 'node', 'x.js'], /^tool-envelope gateway: --approval-ttl must be a positive integer, got '-1'$/m],
    [['--http', '-1', '--', 'node', 'x.js'], /^tool-envelope gateway: --http must be a port number from 0 to 65535, got '-1'$/m],
    // Refused before the upstream starts: the command does not exist, and no "failed to start" is said.
    [['--http', '99999', '--', '/nonexistent/upstream'], /^tool-envelope gateway: --http must be a port number from 0 to 65535, got '99999'$/m],
    [
      ['--store', 'mysql://app:pw@db/x', '--', 'node', 'x.js'],
      /^tool-envelope gateway: --store mysql:\/\/app:\*\*\*@db\/x: unknown scheme 'mysql:\/\/'; give a SQLite file \(or sqlite:PATH\), a postgres:\/\/ or postgresql:\/\/ URL, or memory$/m,
    ],
    [['--store', '', '--', 'node', 'x.js'], /^tool-envelope gateway: --store needs a location: a SQLite file .* \(or --no-store\)$/m],
    // A duration a timer cannot wait (over 2^31-1 ms) fired at once: every call timed out in ~4 ms.
    [
      ['--deadline', '99999999999', '--', 'node', 'x.js'],
      /^tool-envelope gateway: --deadline must be at most 2147483647 ms \(about 24.8 days\), got '99999999999'$/m,
    ],
    [['--session-idle', '2147483648', '--http', '0', '--', 'node', 'x.js'], /^tool-envelope gateway: --session-idle must be at most 2147483647 ms/m],
    [['--health-interval', '2147483648', '--', 'node', 'x.js'], /^tool-envelope gateway: --health-interval must be at most 2147483647 ms/m],
    [['--approval-poll', '2147483648', '--', 'node', 'x.js'], /^tool-envelope gateway: --approval-poll must be at most 2147483647 ms/m],
    [['--approval-wait', '2147483648', '--no-store', '--', 'node', 'x.js'], /^tool-envelope gateway: --approval-wait must be at most 2147483647 ms/m],
    // A console without sign-in off loopback signed anyone in as admin (a Host: localhost header sufficed).
    [
      ['--http', '0', '--host', '0.0.0.0', '--insecure-no-auth', '--console', '--', 'node', 'x.js'],
      /^tool-envelope gateway: --console on --host 0\.0\.0\.0 is reachable from other machines .*--insecure-no-auth covers the MCP endpoint only, never the console\)$/m,
    ],
  ])('%j', async (args, message) => {
    const io = memoryIo();
    expect(await run(args, io)).toBe(2);
    expect(io.err()).toMatch(message);
    expect(io.err()).not.toMatch(/failed to start|needs a value/);
  });

  it("the config file's deadlineMs over the timer limit", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'te-parse-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'upstreams:\n  - { name: a, command: node, args: [x.js] }\ndeadlineMs: 99999999999\n');
    const io = memoryIo();
    expect(await run(['--config', file], io)).toBe(2);
    expect(io.err()).toMatch(/^tool-envelope gateway: the config file's deadlineMs must be at most 2147483647 ms .*got 99999999999$/m);
  });
});
