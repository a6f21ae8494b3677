import { describe, expect, it } from 'vitest';
import { readTraceparent } from './trace-context.js';

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('readTraceparent (W3C Trace Context)', () => {
  it('reads the fields of a valid header, with one whitespace character around it tolerated', () => {
    const fields = { version: '00', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentId: '00f067aa0ba902b7', traceFlags: 1 };
    expect(readTraceparent(VALID)).toEqual(fields);
    expect(readTraceparent(` ${VALID} `)).toEqual(fields);
    expect(readTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')?.traceFlags).toBe(0);
  });

  it('accepts more fields after the flags only in a future version', () => {
    expect(readTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future')?.version).toBe('01');
    expect(readTraceparent(`${VALID}-future`)).toBeUndefined();
  });

  it('rejects what the spec says to ignore: ff, uppercase, all-zero ids, wrong lengths, non-strings, oversize', () => {
    for (const bad of [
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01',
      'AA-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1',
      `  ${VALID}`,
      `01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-${'x'.repeat(500)}`,
      '',
      42,
      undefined,
    ]) {
      expect(readTraceparent(bad), String(bad)).toBeUndefined();
    }
  });
});
