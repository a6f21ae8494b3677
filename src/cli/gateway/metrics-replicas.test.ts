// The metrics of gateways as an operator runs them: two replicas on one store scraped by a real
// Prometheus server (its HTTP API read back), approvals decided with the CLI verb, an upstream
// killed; and /metrics while a real PostgreSQL store is stopped or frozen (SIGSTOP).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { findPgBin, startThrowawayPg } from '../../../test/pg-server.mjs';
import { describeNeeding, describeWith } from '../../../test/prereqs.js';
import { missingMessage, prereq } from '../../../scripts/test-prereqs.mjs';
import { freePort } from '../../../test/scale-out-support.js';
import { httpClient, repoRoot, tempDir } from '../../mcp/test-support/harness.js';
import * as audit from '../audit.js';
import { eventually, startGateway, type ObservedGateway } from '../test-support/observed-gateway.js';
import { prometheusQuery, samples } from '../test-support/prometheus.js';
import { childrenOf } from '../test-support/processes.js';
import { runVerb } from '../test-support/run-verb.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

const running: ObservedGateway[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(running.map((g) => g.stop().catch(() => 0)));
});

async function gateway(args: string[]): Promise<ObservedGateway> {
  const g = await startGateway(args);
  running.push(g);
  return g;
}

/** A paused `delete_item` call's approval id (ContextOS envelopes carry it in metadata). */
async function paused(url: string, id: string): Promise<string> {
  const { client } = await httpClient(url);
  try {
    const r = (await client.callTool({ name: 'delete_item', arguments: { id } })) as CallToolResult;
    const env = r.structuredContent as { status: string; metadata?: { approvalId?: string } };
    expect(env.status).toBe('paused');
    return env.metadata!.approvalId!;
  } finally {
    await client.close();
  }
}

describeNeeding('prometheus', 'two gateway replicas on one store, scraped by a real Prometheus server', (prometheusBin) => {
  it('store-wide gauges are not summed by the dashboard; CLI decisions and the outcomes they settle are counted once; counters start at 0', async () => {
    const dir = tempDir();
    const db = join(dir, 'audit.db');
    const flags = ['--store', db, '--http', '0', '--metrics', '--quiet', '--dialect', 'contextos', '--principal', 'user:alice', '--approval-poll', '50'];
    const others = new Set(childrenOf(process.pid, COUNTING));
    const g1 = await gateway([...flags, '--', process.execPath, COUNTING]);
    const g1Upstream = childrenOf(process.pid, COUNTING).filter((p) => !others.has(p));
    expect(g1Upstream.length).toBe(1);
    const g2 = await gateway([...flags, '--', process.execPath, COUNTING]);
    const ids = [await paused(g1.url, 'a'), await paused(g1.url, 'b'), await paused(g2.url, 'c')];

    const port = await freePort();
    mkdirSync(join(dir, 'prom'));
    const targets = [g1, g2].map((g) => `'${new URL(g.base).host}'`).join(', ');
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gateway\n    static_configs:\n      - targets: [${targets}]\n`,
    );
    const prom = spawn(
      prometheusBin,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'prom')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(prom);
    const query = prometheusQuery(port);
    const byLabels = async (q: string, labels: string[]): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const s of await query(q)) out[labels.map((l) => s.metric[l] ?? '').join('|')] = Number(s.value[1]);
      return out;
    };
    await eventually(
      async () => ((await query('count(tool_envelope_approvals_waiting)'))[0]?.value[1] === '2' ? true : undefined),
      'both replicas scraped',
      60_000,
    );

    // Each replica reports the whole store's 3 pending requests: the dashboard's panel shows 3, not 6.
    expect(await byLabels('tool_envelope_approvals_waiting', ['instance'])).toEqual({ [new URL(g1.base).host]: 3, [new URL(g2.base).host]: 3 });
    const dashboard = JSON.parse(readFileSync(join(repoRoot, 'docs/grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const waiting = dashboard.panels.find((p) => p.title === 'Approvals waiting')!.targets[0]!.expr.replaceAll('$job', '.*');
    expect(Number((await query(waiting))[0]!.value[1])).toBe(3);

    // Known label sets are there at 0 before anything happened to them.
    expect(await byLabels('sum by (decision) (tool_envelope_approvals_decided_total)', ['decision'])).toEqual({
      approved: 0,
      rejected: 0,
      expired: 0,
      failed: 0,
    });
    expect(Object.values(await byLabels('tool_envelope_upstream_exits_total', ['instance']))).toEqual([0, 0]);
    expect(Object.keys(await byLabels(`tool_envelope_upstream_faults_total{instance="${new URL(g1.base).host}"}`, ['code'])).sort()).toEqual([
      'upstream-exited',
      'upstream-hung',
      'upstream-protocol-error',
      'upstream-rpc-error',
      'upstream-timeout',
      'upstream-unavailable',
    ]);

    // Decisions made with the CLI: the replicas pick them up and count each once between them, with the outcome it settles.
    const approved = await runVerb(audit, ['approvals', 'approve', ids[0]!, '--store', db, '--wait', '30']);
    expect(approved.code).toBe(0);
    expect((await runVerb(audit, ['approvals', 'reject', ids[1]!, '--reason', 'no', '--store', db])).code).toBe(0);
    await eventually(
      async () => ((await query('sum(tool_envelope_approvals_decided_total)'))[0]?.value[1] === '2' ? true : undefined),
      'the decisions counted',
      30_000,
    );
    await eventually(
      async () => ((await query('sum(tool_envelope_tool_calls_total{status=~"completed|rejected"})'))[0]?.value[1] === '2' ? true : undefined),
      'the settled outcomes counted',
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1500)); // a further scrape of both: nothing counted twice
    expect(await byLabels('sum by (decision) (tool_envelope_approvals_decided_total)', ['decision'])).toEqual({
      approved: 1,
      rejected: 1,
      expired: 0,
      failed: 0,
    });
    expect(
      await byLabels('sum by (gen_ai_tool_name, status, error_type) (tool_envelope_tool_calls_total)', ['gen_ai_tool_name', 'status', 'error_type']),
    ).toEqual({
      'delete_item|paused|': 3,
      'delete_item|completed|': 1,
      'delete_item|rejected|elevation': 1,
    });
    // The approved run is in the duration histograms too (the paused calls and it); the rejection ran nothing.
    expect(await byLabels('sum by (gen_ai_tool_name) (gen_ai_execute_tool_duration_seconds_count)', ['gen_ai_tool_name'])).toEqual({ delete_item: 4 });
    expect(Number((await query(waiting))[0]!.value[1])).toBe(1);

    // An upstream killed once: increase() sees the exit (the series was at 0 before it).
    process.kill(g1Upstream[0]!, 'SIGKILL');
    const g1Exits = `tool_envelope_upstream_exits_total{instance="${new URL(g1.base).host}"}`;
    await eventually(async () => ((await query(g1Exits))[0]?.value[1] === '1' ? true : undefined), 'the exit scraped', 30_000);
    await new Promise((r) => setTimeout(r, 2500));
    expect(Number((await query(`increase(${g1Exits}[1m])`))[0]!.value[1])).toBeGreaterThan(0.5);
    expect(await g1.stop()).toBe(0);
    expect(await g2.stop()).toBe(0);
  }, 120_000);
});

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
