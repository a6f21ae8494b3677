// The gateway's HTTP-upstream tests once more under the reference fetch
// (`boundedFetch(max, perRequestSignalFetch())`, `useReferenceUpstreamFetch(true)`), so the plain
// path the node:http fetch stands in for stays tested (bench/README.md, "The rule for speed tricks").
// Each test file runs in its own worker: the switch holds for the files imported here only.
import { expect, it } from 'vitest';
import { upstreamFetch, useReferenceUpstreamFetch } from './node-fetch.js';

it('the switch chooses the fetch of transports made from then on', () => {
  useReferenceUpstreamFetch(false);
  expect(upstreamFetch(1024).name).toBe('nodeFetch');
  useReferenceUpstreamFetch(true);
  expect(upstreamFetch(1024).name).not.toBe('nodeFetch');
});

useReferenceUpstreamFetch(true);

await import('./modern.test.js');
await import('../wire/result-size.test.js');
await import('../gateway/gateway.test.js');
await import('../rounds/relay.test.js');
