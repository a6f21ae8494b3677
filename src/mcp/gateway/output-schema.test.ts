// The compact outputSchema: it accepts every valid envelope of each contract (generated documents
// the oracle accepts, and what the gateway really emits, checked by the SDK client itself), and it
// keeps server-filesystem's tools/list through the gateway within 1.5x of the upstream's own.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { contextosResultDoc, dwDoc, mcecDoc } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import type { Dialect } from '../envelope.js';
import { Gateway } from './gateway.js';
import { toolOutputSchema } from './output-schema.js';
import { clientFor, directClient, faultSpec, repoRoot, silent } from '../test-support/harness.js';

const FILESYSTEM = join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const DIALECTS = ['mcec', 'dw', 'contextos'] as const satisfies readonly Dialect[];
// The SDK client compiles outputSchema with a default (draft-07) Ajv.
const ajv = new Ajv({ strict: false, allErrors: true });

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe('the compact outputSchema accepts every valid envelope', () => {
  const docs = { mcec: mcecDoc, dw: dwDoc, contextos: contextosResultDoc };
  it.each(DIALECTS)('%s: generated documents valid under the published schema', (dialect) => {
    const validate = ajv.compile(toolOutputSchema(dialect));
    const oracle = dialect === 'contextos' ? 'contextos-result' : dialect;
    fc.assert(
      fc.property(docs[dialect], (doc) => {
        expect(oracleValidate(oracle, doc).valid).toBe(true);
        expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it.each(DIALECTS)('%s: it rejects what is not an envelope of the dialect', (dialect) => {
    const validate = ajv.compile(toolOutputSchema(dialect));
    const others = DIALECTS.filter((d) => d !== dialect);
    for (const other of others) {
      const sample = fc.sample(docs[other], 20);
      // MCEC needs only `ok`: a DW or ContextOS document has none.
      for (const doc of sample) expect(validate(doc)).toBe(false);
    }
    expect(validate({})).toBe(false);
  });

  it.each(DIALECTS)("%s: the gateway's real outputs pass the SDK client's own outputSchema check", async (dialect) => {
    const gw = await Gateway.start({
      upstreams: [faultSpec()],
      dialect,
      log: silent,
      deadlineMs: 300,
      supervision: { healthIntervalMs: 0, restartInitialDelayMs: 50 },
    });
    cleanups.push(() => gw.close());
    const client = await clientFor(gw.createServer());
    cleanups.push(() => client.close());
    const { tools } = await client.listTools();
    for (const t of tools) expect(t.outputSchema).toEqual(toolOutputSchema(dialect));
    const validate = ajv.compile(toolOutputSchema(dialect));
    // Success, tool error, timeout, upstream exit, progress: the client validates structuredContent against outputSchema and throws on a mismatch.
    for (const [name, args] of [
      ['echo', { text: 'hi' }],
      ['fail', {}],
      ['never', {}],
      ['progress', {}],
      ['exit', {}],
      ['echo', { text: 'back' }],
    ] as const) {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, r.structuredContent).errors).toEqual([]);
      expect(validate(r.structuredContent)).toBe(true);
    }
  });
});

describe('payload economy of tools/list', () => {
  it('server-filesystem through the gateway is at most 1.5x the bytes of its own tools/list', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'te-fs-'));
    writeFileSync(join(dir, 'a.txt'), 'hello');
    const spec = { name: 'fs', command: process.execPath, args: [FILESYSTEM, dir] };
    const direct = await directClient(spec);
    cleanups.push(() => direct.close());
    const own = JSON.stringify((await direct.listTools()).tools);
    for (const dialect of DIALECTS) {
      const gw = await Gateway.start({ upstreams: [spec], dialect, log: silent, supervision: { healthIntervalMs: 0 } });
      cleanups.push(() => gw.close());
      const client = await clientFor(gw.createServer());
      cleanups.push(() => client.close());
      const listed = (await client.listTools()).tools;
      const through = JSON.stringify(listed);
      expect(listed.length).toBeGreaterThan(10);
      expect(through.length / own.length, `${dialect}: ${through.length} vs ${own.length} bytes`).toBeLessThanOrEqual(1.5);
      // `full` is what the budget is for: it would not fit.
      const full = await Gateway.start({ upstreams: [spec], dialect, log: silent, outputSchema: 'full', supervision: { healthIntervalMs: 0 } });
      cleanups.push(() => full.close());
      const fullClient = await clientFor(full.createServer());
      cleanups.push(() => fullClient.close());
      const fullTools = (await fullClient.listTools()).tools;
      expect(fullTools[0]!.outputSchema).toEqual(toolOutputSchema(dialect, 'full'));
      if (dialect !== 'contextos') expect(JSON.stringify(fullTools).length / own.length).toBeGreaterThan(1.5);
      const call = (await client.callTool({ name: 'list_directory', arguments: { path: dir } })) as CallToolResult;
      expect(call.isError).toBe(false);
    }
  });
});
