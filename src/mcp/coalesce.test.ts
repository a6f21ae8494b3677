import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { prepareResponse, useReferenceResponses } from './coalesce.js';

describe('prepareResponse', () => {
  it("coalesces by default, and leaves the SDK's response path untouched under useReferenceResponses", async () => {
    const own: boolean[] = [];
    const server = createServer((_req, res) => {
      prepareResponse(res);
      own.push(['write', 'end', 'flushHeaders'].every((name) => Object.hasOwn(res, name)));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      res.write('data: 1\n\n');
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      expect(await (await fetch(url)).text()).toBe('data: 1\n\n');
      const before = useReferenceResponses(true);
      try {
        expect(await (await fetch(url)).text()).toBe('data: 1\n\n');
      } finally {
        expect(useReferenceResponses(before)).toBe(true);
      }
      expect(own).toEqual([true, false]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
