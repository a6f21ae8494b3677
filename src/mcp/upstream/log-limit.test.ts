import { describe, expect, it } from 'vitest';
import { LineLimit } from './log-limit.js';

describe('LineLimit', () => {
  it('logs the first lines of each window, counts the rest, and says the count with the next line after the window', () => {
    let t = 0;
    const limit = new LineLimit('lines', 3, 1_000, () => t);
    const logged: string[] = [];
    for (let i = 0; i < 10; i++) logged.push(...limit.take(`line ${i}`));
    expect(logged).toEqual(['line 0', 'line 1', 'line 2']);
    t = 999;
    expect(limit.take('line 10')).toEqual([]);
    t = 1_000;
    expect(limit.take('line 11')).toEqual(['(8 more lines not shown)', 'line 11']);
    expect(limit.flush()).toEqual([]);
  });

  it('says what it held back when the source ends, once', () => {
    const limit = new LineLimit('lines', 1, 60_000, () => 5);
    expect([...limit.take('a'), ...limit.take('b'), ...limit.take('c')]).toEqual(['a']);
    expect(limit.flush()).toEqual(['(2 more lines not shown)']);
    expect(limit.flush()).toEqual([]);
  });

  it('bounds the lines of a flood to the budget per window', () => {
    let t = 0;
    const limit = new LineLimit('lines', 10, 10_000, () => t);
    let lines = 0;
    // 1 000 000 lines over 50 s: 5 windows.
    for (let i = 0; i < 1_000_000; i++) {
      t = Math.floor(i / 20_000) * 1_000;
      lines += limit.take('x').length;
    }
    lines += limit.flush().length;
    expect(lines).toBe(5 * 10 + 5);
  });
});
