// The gateway's command line refused before anything starts: a negative number is its flag's value
// (said wrong by the flag's own check, not "needs a value"), a port out of range, a store location
// with a scheme no store has, an empty one.
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
  ])('%j', async (args, message) => {
    const io = memoryIo();
    expect(await run(args, io)).toBe(2);
    expect(io.err()).toMatch(message);
    expect(io.err()).not.toMatch(/failed to start|needs a value/);
  });
});
