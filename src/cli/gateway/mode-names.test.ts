// Mode names checked against the tools listed at start: a name that sets nothing is warned of, and
// an upstream that listed no tools has its modes reported as unchecked rather than passed in silence.
import { describe, expect, it } from 'vitest';
import type { UpstreamSpec } from '../../mcp/upstream/upstream.js';
import { modeNameWarnings } from './mode-names.js';

const upstream = (name: string, modes?: UpstreamSpec['modes']): UpstreamSpec => ({ name, command: 'node', ...(modes && { modes }) });
const listed = [{ name: 'a__read', upstream: 'a', upstreamTool: 'read' }];

describe('modeNameWarnings', () => {
  it('names a mode for a tool the upstream does not list, with the nearest listed one', () => {
    expect(modeNameWarnings({}, [upstream('a', { reed: 'read_only' })], listed)).toEqual([
      "the modes of upstream 'a' name tool 'reed', which it does not list (nearest: 'read'): it sets no mode",
    ]);
  });

  it('says the modes of an upstream that listed no tools at start could not be checked', () => {
    expect(modeNameWarnings({}, [upstream('a', { read: 'read_only' }), upstream('b', { write: 'destructive', rm: 'destructive' })], listed)).toEqual([
      "the modes of upstream 'b' ('write', 'rm') could not be checked: it listed no tools at start",
    ]);
  });

  it('is silent for an upstream without modes, listed or not', () => {
    expect(modeNameWarnings({ a__read: 'read_only' }, [upstream('a'), upstream('b')], listed)).toEqual([]);
  });
});
