// Binary content through the gateway: the upstream's image and blob-resource blocks stay in
// `content` byte for byte, and the envelope describes them (kind, MIME type, bytes, SHA-256,
// content index) instead of carrying their base64 a second time. Real server-everything, real SDK client.
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../test/oracle.js';
import { contracts } from '../core/contracts/registry.js';
import type { Dialect } from './envelope.js';
import { Gateway } from './gateway/gateway.js';
import { clientFor, directClient, everythingSpec, silent } from './test-support/harness.js';

const DIALECTS: Dialect[] = ['mcec', 'dw', 'contextos'];
const sha = (b64: string): string => createHash('sha256').update(Buffer.from(b64, 'base64')).digest('hex');

describe.each(DIALECTS)('binary content (%s)', (dialect) => {
  let gw: Gateway;
  let client: Client;
  let direct: Client;
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [everythingSpec()], dialect, log: silent, supervision: { healthIntervalMs: 0 } });
    client = await clientFor(gw.createServer());
    direct = await directClient(everythingSpec());
  });
  afterAll(async () => {
    await client?.close();
    await direct?.close();
    await gw?.close();
  });

  async function both(name: string, args: Record<string, unknown>): Promise<{ via: CallToolResult; own: CallToolResult }> {
    const before = (await direct.callTool({ name, arguments: args })) as CallToolResult;
    const via = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, via.structuredContent).errors).toEqual([]);
    // server-everything stamps some blobs with the second they were made: the gateway's content must
    // equal the upstream's own answer from just before or, across a second's boundary, just after.
    const after = isDeepStrictEqual(via.content, before.content) ? before : ((await direct.callTool({ name, arguments: args })) as CallToolResult);
    expect(via.content).toEqual(after.content);
    return { via, own: after };
  }

  it('an image is described in the envelope, its base64 only in content', async () => {
    const { via, own } = await both('get-tiny-image', {});
    const images = own.content.map((b, i) => [b, i] as const).filter(([b]) => b.type === 'image') as [
      { type: 'image'; data: string; mimeType: string },
      number,
    ][];
    expect(images.length).toBeGreaterThan(0);
    const envelope = JSON.stringify(via.structuredContent);
    for (const [img] of images) expect(envelope).not.toContain(img.data);
    const outcome = contracts[dialect].decode(via.structuredContent);
    if (dialect === 'dw') return; // DW carries a bounded preview of the result, checked to hold no base64 above.
    const listed = (outcome.result as { content: Record<string, unknown>[] }).content;
    expect(listed).toHaveLength(own.content.length);
    for (const [img, i] of images) {
      expect(listed[i]).toEqual({
        type: 'image',
        kind: 'image',
        mimeType: img.mimeType,
        bytes: Buffer.from(img.data, 'base64').length,
        sha256: sha(img.data),
        contentIndex: i,
      });
    }
    for (const [i, b] of own.content.entries()) if (b.type === 'text') expect(listed[i]).toEqual(b);
  });

  it('an embedded blob resource is described with its URI', async () => {
    const { via, own } = await both('get-resource-reference', { resourceType: 'Blob', resourceId: 2 });
    const i = own.content.findIndex((b) => b.type === 'resource');
    const res = (own.content[i] as { resource: { uri: string; blob: string; mimeType?: string } }).resource;
    expect(JSON.stringify(via.structuredContent)).not.toContain(res.blob);
    if (dialect === 'dw') return;
    const listed = (contracts[dialect].decode(via.structuredContent).result as { content: Record<string, unknown>[] }).content;
    expect(listed[i]).toEqual({
      type: 'resource',
      kind: 'blob',
      mimeType: res.mimeType ?? null,
      uri: res.uri,
      bytes: Buffer.from(res.blob, 'base64').length,
      sha256: sha(res.blob),
      contentIndex: i,
    });
  });
});
