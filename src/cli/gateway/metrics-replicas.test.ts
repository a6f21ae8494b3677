// The metrics of gateways as an operator runs them: /metrics while a real PostgreSQL store is
// stopped or frozen (SIGSTOP).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { findPgBin, startThrowawayPg } from '../../../test/pg-server.mjs';
import { describeWith } from '../../../test/prereqs.js';
import { missingMessage, prereq } from '../../../scripts/test-prereqs.mjs';
import { repoRoot } from '../../mcp/test-support/harness.js';
import { eventually, startGateway, type ObservedGateway } from '../test-support/observed-gateway.js';
import { childrenOf } from '../test-support/processes.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

const running: ObservedGateway[] = [];
afterAll(async () => {
  await Promise.all(running.map((g) => g.stop().catch(() => 0)));
});

async function gateway(args: string[]): Promise<ObservedGateway> {
  const g = await startGateway(args);
  running.push(g);
  return g;
}

/** Sample name and labels -> value, from an exposition. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

describeWith('/metrics while a PostgreSQL store is down', findPgBin(), 'PostgreSQL server', missingMessage(prereq('postgresql')), (bin) => {
  it('answers 200 with tool_envelope_store_up 0 and the pending count left out, within the read bound, whether the server is frozen or stopped', async () => {
    const pg = await startThrowawayPg({ bin });
    let frozen: number[] = [];
    try {
      const g = await gateway(['--store', pg.url, '--http', '0', '--metrics', '--quiet', '--', process.execPath, COUNTING]);
      const scrape = async (): Promise<{ status: number; ms: number; text: string }> => {
        const t0 = performance.now();
        const r = await fetch(`${g.base}/metrics`);
        return { status: r.status, text: await r.text(), ms: performance.now() - t0 };
      };
      const up = await scrape();
      expect(up.status).toBe(200);
      expect(samples(up.text).get('tool_envelope_store_up')).toBe(1);
      expect(samples(up.text).get('tool_envelope_approvals_waiting')).toBe(0);

      // Frozen: every server process stopped, so a query hangs rather than failing.
      const postmaster = Number(readFileSync(join(pg.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      frozen = [postmaster, ...childrenOf(postmaster)];
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
      for (let i = 0; i < 2; i++) {
        const hung = await scrape();
        expect(hung.status).toBe(200);
        expect(hung.ms).toBeLessThan(2_000);
        expect(samples(hung.text).get('tool_envelope_store_up')).toBe(0);
        expect(samples(hung.text).has('tool_envelope_approvals_waiting')).toBe(false);
        expect(samples(hung.text).get('tool_envelope_upstream_up{upstream="upstream"}')).toBe(1);
      }
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
      frozen = [];
      await eventually(async () => (samples((await scrape()).text).get('tool_envelope_store_up') === 1 ? true : undefined), 'store_up 1 again');

      // Stopped: the connection is refused.
      pg.stop();
      const down = await scrape();
      expect(down.status).toBe(200);
      expect(samples(down.text).get('tool_envelope_store_up')).toBe(0);
      expect(samples(down.text).has('tool_envelope_approvals_waiting')).toBe(false);
      expect(down.text).toContain('# TYPE tool_envelope_audit_commit_failures_total counter');
      await g.stop();
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
      try {
        pg.stop();
      } catch {
        // Stopped above.
      }
    }
  }, 60_000);
});
