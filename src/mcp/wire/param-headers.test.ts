// The SEP-2243 rules the gateway applies to `Mcp-Param-*` headers, against the SDK v2 client's own
// encoding (the headers its `callTool` sends are the ones the gateway must accept) and the spec's
// cases: which declarations count, how values decode and compare, and how the gateway encodes them.
import { describe, expect, it } from 'vitest';
import { paramHeaderMismatch, paramHeadersFor, paramHeadersOf } from './param-headers.js';

const schema = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });
const region = { type: 'string', 'x-mcp-header': 'Region' };

describe('paramHeadersOf', () => {
  it('finds declarations at any depth through properties, and caches them per schema', () => {
    const s = schema({ region, where: schema({ zone: { type: 'integer', 'x-mcp-header': 'Zone' } }), plain: { type: 'string' } });
    expect(paramHeadersOf(s)).toEqual([
      { path: ['region'], name: 'Region', type: 'string' },
      { path: ['where', 'zone'], name: 'Zone', type: 'integer' },
    ]);
    expect(paramHeadersOf(s)).toBe(paramHeadersOf(s));
    expect(paramHeadersOf(undefined)).toEqual([]);
  });

  it('a schema that breaks the rules declares none', () => {
    for (const bad of [
      schema({ list: { type: 'array', items: region } }),
      schema({ a: region }, { anyOf: [schema({ b: { type: 'string', 'x-mcp-header': 'B' } })] }),
      schema({ a: { type: 'object', 'x-mcp-header': 'A' } }),
      schema({ a: { type: 'string', 'x-mcp-header': 'Not a token' } }),
      schema({ a: region, b: { type: 'string', 'x-mcp-header': 'region' } }),
      { type: 'object', 'x-mcp-header': 'Root' },
    ]) {
      expect(paramHeadersOf(bad), JSON.stringify(bad)).toEqual([]);
    }
    // `number` is not permitted for clients, but the SDK's server still checks it.
    expect(paramHeadersOf(schema({ n: { type: 'number', 'x-mcp-header': 'N' } }))).toHaveLength(1);
  });
});

describe('paramHeaderMismatch', () => {
  const declared = paramHeadersOf(schema({ region, count: { type: 'integer', 'x-mcp-header': 'Count' }, on: { type: 'boolean', 'x-mcp-header': 'On' } }));
  const check = (args: unknown, headers: Record<string, string>) => paramHeaderMismatch(declared, args, (name) => headers[name]);

  it('accepts headers equal to the arguments (integers compared as numbers) and needs none for absent or null ones', () => {
    expect(check({ region: 'eu', count: 42, on: true }, { 'Mcp-Param-Region': 'eu', 'Mcp-Param-Count': '42.0', 'Mcp-Param-On': 'true' })).toBeUndefined();
    expect(check({ region: null }, {})).toBeUndefined();
    expect(check({}, { 'Mcp-Param-Region': 'ignored' })).toBeUndefined();
    expect(check({ region: 'é' }, { 'Mcp-Param-Region': `=?base64?${Buffer.from('é').toString('base64')}?=` })).toBeUndefined();
  });

  it('refuses a missing, different or badly encoded header, naming it', () => {
    expect(check({ region: 'eu' }, {})?.data.mismatch.header).toBe('Mcp-Param-Region');
    expect(check({ region: 'eu' }, {})?.message).toMatch(/^Bad Request: the request headers and body disagree: .*header is absent/);
    expect(check({ region: 'eu' }, { 'Mcp-Param-Region': 'EU' })?.data.mismatch.body).toContain('decodes to "EU"');
    expect(check({ count: 42 }, { 'Mcp-Param-Count': '43' })?.data.mismatch.header).toBe('Mcp-Param-Count');
    expect(check({ region: 'eu' }, { 'Mcp-Param-Region': '=?base64?ZXU?=' })?.data.mismatch.body).toContain('invalid Base64');
    // Not valid UTF-8 once decoded.
    expect(check({ region: 'x' }, { 'Mcp-Param-Region': '=?base64?/w==?=' })?.data.mismatch.body).toContain('invalid Base64');
  });
});

describe('paramHeadersFor', () => {
  it("encodes as the spec says, and what it sends passes the gateway's own check", () => {
    const declared = paramHeadersOf(schema({ region, count: { type: 'integer', 'x-mcp-header': 'Count' } }));
    expect(paramHeadersFor(declared, { region: 'eu-west', count: 7 })).toEqual({ 'Mcp-Param-Region': 'eu-west', 'Mcp-Param-Count': '7' });
    expect(paramHeadersFor(declared, { other: 1 })).toBeUndefined();
    for (const value of ['Zürich', ' padded ', '', '=?base64?abc?=', 'tab\there']) {
      const headers = paramHeadersFor(declared, { region: value })!;
      expect(headers['Mcp-Param-Region'], value).toMatch(value === 'tab\there' ? /^tab\there$/ : /^=\?base64\?[A-Za-z0-9+/=]*\?=$/);
      expect(paramHeaderMismatch(declared, { region: value }, (name) => headers[name])).toBeUndefined();
    }
  });
});
