// The gateway verb's upstream flags of issue 40: --upstream-era, --strict-upstream and
// --tool-failure-meta, and the config file's per-upstream `era:` and `strict:` they override.
import { describe, expect, it } from 'vitest';
import { parseGatewayConfig } from '../../mcp/gateway/config.js';
import { applyEnvFlags, parseUpstreamFlags, type UpstreamFlags } from './upstream-flags.js';

const flags = (values: Record<string, unknown>): UpstreamFlags => {
  const parsed = parseUpstreamFlags(values);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
};

describe('--upstream-era, --strict-upstream, --tool-failure-meta', () => {
  it('parse, and refuse an era that is not auto, legacy or modern', () => {
    expect(flags({ 'upstream-era': 'legacy', 'strict-upstream': true, 'tool-failure-meta': true })).toMatchObject({
      era: 'legacy',
      strict: true,
      toolFailureMeta: true,
    });
    expect(flags({})).not.toHaveProperty('era');
    expect(parseUpstreamFlags({ 'upstream-era': '2025' })).toBe("--upstream-era must be auto, legacy or modern, got '2025'");
  });

  it('set every upstream, URL and command alike, over the config file', () => {
    const cfg = parseGatewayConfig(
      {
        upstreams: [
          { name: 'a', prefix: 'a_', url: 'http://127.0.0.1:1/mcp', era: 'modern' },
          { name: 'b', prefix: 'b_', command: 'node', era: 'auto', strict: true },
        ],
      },
      '/',
    );
    expect(cfg.upstreams.map((u) => [u.era, u.strict])).toEqual([
      ['modern', undefined],
      ['auto', true],
    ]);
    expect(applyEnvFlags(cfg.upstreams, flags({ 'upstream-era': 'legacy', 'strict-upstream': true })).map((u) => [u.era, u.strict])).toEqual([
      ['legacy', true],
      ['legacy', true],
    ]);
    // Without the flags the file's own say holds.
    expect(applyEnvFlags(cfg.upstreams, flags({})).map((u) => u.era)).toEqual(['modern', 'auto']);
  });

  it("refuse a config file's era or strict of the wrong kind", () => {
    expect(() => parseGatewayConfig({ upstreams: [{ name: 'a', url: 'http://x/mcp', era: 'new' }] }, '/')).toThrow(
      'config.upstreams[0].era: must be auto, legacy or modern',
    );
    expect(() => parseGatewayConfig({ upstreams: [{ name: 'a', url: 'http://x/mcp', strict: 'yes' }] }, '/')).toThrow(
      'config.upstreams[0].strict: must be true or false',
    );
  });
});
