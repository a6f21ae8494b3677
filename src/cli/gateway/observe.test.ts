// What an operator watches of `tool-envelope gateway` (#39), with real parts: the verb run from the
// sources in front of the counting reference server, a real SDK client, a real Prometheus server
// scraping it (its HTTP API read back), promtool parsing the exposition, the upstream process
// killed for /readyz, an OTLP/HTTP receiver for the spans, and the JSON log lines parsed.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findPgBin, startThrowawayPg } from '../../../test/pg-server.mjs';
import { describeNeeding, describeWith } from '../../../test/prereqs.js';
import { missingMessage, prereq } from '../../../scripts/test-prereqs.mjs';
import { httpClient, repoRoot, tempDir } from '../../mcp/test-support/harness.js';
import { tokenDigest } from '../../mcp/serve/auth.js';
import { traceExportFrom } from '../../observe/traces.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import { PACKAGE_VERSION } from '../../version.js';
import { run } from '../gateway.js';
import { memoryIo } from '../test-support/memory-io.js';
import { decodeTraceExport } from '../test-support/otlp-protobuf.js';
import { eventually, startGateway, type ObservedGateway } from '../test-support/observed-gateway.js';
import { prometheusQuery, samples, seriesOf } from '../test-support/prometheus.js';
import { childrenOf } from '../test-support/processes.js';
import { freePort } from '../../../test/scale-out-support.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const TOOLS = ['read_notes', 'write_note', 'delete_item', 'purge_all', 'remember'];

const running: ObservedGateway[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(running.map((g) => g.stop().catch(() => 0)));
});

async function gateway(args: string[], env: Record<string, string> = {}): Promise<ObservedGateway> {
  const g = await startGateway(args, env);
  running.push(g);
  return g;
}

describeNeeding('prometheus', 'metrics scraped by a real Prometheus server', (prometheusBin) => {
  it('finds exactly the calls, error categories and latency histogram the client caused; promtool parses it; unknown tools add no series', async () => {
    const dir = tempDir();
    const g = await gateway(['--store', join(dir, 'audit.db'), '--http', '0', '--metrics', '--quiet', '--', process.execPath, COUNTING]);
    const target = new URL(g.base).host;
    const { client, transport } = await httpClient(g.url);
    // 5 reads, 3 writes, 2 writes refused by the upstream's input validation, 1 destructive call paused.
    for (let i = 0; i < 5; i++) await client.callTool({ name: 'read_notes', arguments: {} });
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'write_note', arguments: { text: `n${i}` } });
    for (let i = 0; i < 2; i++) await client.callTool({ name: 'write_note', arguments: {} });
    await client.callTool({ name: 'delete_item', arguments: { id: 'x' } });

    const port = await freePort();
    const data = join(dir, 'prom');
    mkdirSync(data);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gateway\n    static_configs:\n      - targets: ['${target}']\n`,
    );
    const prom = spawn(
      prometheusBin,
      [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${data}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=error'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(prom);
    const query = prometheusQuery(port);
    // Until a scrape after the calls has landed.
    await eventually(
      async () => ((await query('sum(tool_envelope_tool_calls_total)'))[0]?.value[1] === '11' ? true : undefined),
      'Prometheus sees 11 calls',
      60_000,
    );

    const byLabels = async (q: string, labels: string[]): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const s of await query(q)) out[labels.map((l) => s.metric[l] ?? '').join('|')] = Number(s.value[1]);
      return out;
    };
    expect(await byLabels('tool_envelope_tool_calls_total', ['gen_ai_tool_name', 'status', 'error_type'])).toEqual({
      'read_notes|ok|': 5,
      'write_note|ok|': 3,
      'write_note|error|invalid-argument': 2,
      'delete_item|paused|': 1,
    });
    expect(await byLabels('mcp_server_operation_duration_seconds_count', ['mcp_method_name', 'gen_ai_tool_name', 'error_type'])).toEqual({
      'tools/call|read_notes|': 5,
      'tools/call|write_note|': 3,
      'tools/call|write_note|invalid-argument': 2,
      'tools/call|delete_item|': 1,
    });
    expect(await byLabels('gen_ai_execute_tool_duration_seconds_count', ['gen_ai_tool_name', 'error_type'])).toEqual({
      'read_notes|': 5,
      'write_note|': 3,
      'write_note|invalid-argument': 2,
      'delete_item|': 1,
    });
    expect(await byLabels('tool_envelope_approvals_requested_total', ['gen_ai_tool_name'])).toEqual({ delete_item: 1 });
    expect(await byLabels('tool_envelope_approvals_waiting', [])).toEqual({ '': 1 });
    expect(await byLabels('tool_envelope_upstream_up', ['upstream'])).toEqual({ upstream: 1 });
    expect(await byLabels('tool_envelope_upstream_starts_total', ['upstream'])).toEqual({ upstream: 1 });
    expect(await byLabels('tool_envelope_sessions_open', [])).toEqual({ '': 1 });

    // The histogram, bucket by bucket, is the one the gateway serves (no call ran since): the same counts.
    const direct = samples(await (await fetch(`${g.base}/metrics`)).text());
    const buckets = await query('mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name="read_notes"}');
    expect(buckets.length).toBe(15);
    for (const b of buckets) {
      const key = `mcp_server_operation_duration_seconds_bucket{le="${b.metric.le}",mcp_method_name="tools/call",gen_ai_tool_name="read_notes"}`;
      expect(Number(b.value[1]), key).toBe(direct.get(key));
    }
    expect(buckets.find((b) => b.metric.le === '+Inf')!.value[1]).toBe('5');
    const sum = await query('mcp_server_operation_duration_seconds_sum{gen_ai_tool_name="read_notes"}');
    expect(Number(sum[0]!.value[1])).toBeGreaterThan(0);
    expect(Number(sum[0]!.value[1])).toBe(direct.get('mcp_server_operation_duration_seconds_sum{mcp_method_name="tools/call",gen_ai_tool_name="read_notes"}'));
    const written = await query('tool_envelope_audit_records_total');
    expect(Number(written[0]!.value[1])).toBeGreaterThanOrEqual(11);
    expect(Number((await query('tool_envelope_audit_commit_duration_seconds_count'))[0]!.value[1])).toBeGreaterThan(0);

    // Every query of the Grafana dashboard in docs/ is one Prometheus accepts, over metrics the gateway serves.
    const dashboard = JSON.parse(readFileSync(join(repoRoot, 'docs/grafana-dashboard.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
    const served = await (await fetch(`${g.base}/metrics`)).text();
    for (const { expr } of dashboard.panels.flatMap((p) => p.targets)) {
      await query(expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', '.*'));
      // A metric's name is followed by its selector; labels (in `by (...)`) are not.
      for (const [, name] of expr.matchAll(/\b((?:tool_envelope|mcp_server|gen_ai)_[a-z_]+)\{/g)) {
        expect(served, name).toContain(`# TYPE ${name!.replace(/_(bucket|sum|count)$/, '')} `);
      }
    }

    // promtool (Prometheus's own parser and linter) accepts the exposition.
    const exposition = await (await fetch(`${g.base}/metrics`)).text();
    const promtool = join(dirname(prometheusBin), 'promtool');
    const checked = spawnSync(existsSync(promtool) ? promtool : 'promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);

    // 10 000 calls of tools the upstream does not have are counted, under one label value, and add
    // at most one series.
    const before = seriesOf(exposition).length;
    let refused = 0;
    for (let batch = 0; batch < 100; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, () =>
          client.callTool({ name: `no_such_${Math.random().toString(36).slice(2)}`, arguments: { secret: Math.random().toString(36) } }).catch(() => refused++),
        ),
      );
    }
    expect(refused).toBe(10_000);
    const after = await (await fetch(`${g.base}/metrics`)).text();
    expect(seriesOf(after).length - before).toBeLessThanOrEqual(1);
    expect(after).not.toContain('no_such_');
    expect(samples(after).get('tool_envelope_tool_calls_total{gen_ai_tool_name="_unknown",status="error",error_type="invalid-argument"}')).toBe(10_000);
    // The client's 10 000 requests left no abort listener each on its transport's one long-lived
    // signal (Node's fetch drops its listener only when the request is garbage-collected).
    const transportSignal = (transport as unknown as { _abortController: AbortController })._abortController.signal;
    expect(getEventListeners(transportSignal, 'abort').length).toBeLessThanOrEqual(1);
    await client.close();
    expect(await g.stop()).toBe(0);
  }, 180_000);
});

describe('/healthz and /readyz', () => {
  it('readyz turns 503 when the upstream is killed and 200 when it is back; neither leaks tool names or versions', async () => {
    const dir = tempDir();
    const block = join(dir, 'block');
    // The upstream refuses to start while `block` exists, so the gateway stays without it until the test says.
    const others = new Set(childrenOf(process.pid, COUNTING));
    const g = await gateway(['--no-store', '--http', '0', '--quiet', '--', 'sh', '-c', `test -e ${block} && exit 1; exec ${process.execPath} ${COUNTING}`]);
    const get = async (path: string) => {
      const r = await fetch(`${g.base}${path}`);
      return { status: r.status, text: await r.text(), headers: [...r.headers].map(([k, v]) => `${k}: ${v}`).join('\n') };
    };
    const leaks = (s: string) => [...TOOLS, 'counting', PACKAGE_VERSION, '1.0.0', 'node', 'tool-envelope'].filter((w) => s.includes(w));
    const healthy = await get('/healthz');
    const ready = await get('/readyz');
    expect([healthy.status, ready.status]).toEqual([200, 200]);

    writeFileSync(block, '');
    const pids = childrenOf(process.pid, COUNTING).filter((p) => !others.has(p));
    expect(pids.length).toBe(1);
    process.kill(pids[0]!, 'SIGKILL');
    const down = await eventually(async () => {
      const r = await get('/readyz');
      return r.status === 503 ? r : undefined;
    }, 'readyz 503');
    expect(down.text).toMatch(/^not ready: /);
    expect((await get('/healthz')).status).toBe(200);

    rmSync(block);
    const back = await eventually(
      async () => {
        const r = await get('/readyz');
        return r.status === 200 ? r : undefined;
      },
      'readyz 200 again',
      60_000,
    );
    for (const r of [healthy, ready, down, back]) {
      expect(leaks(r.text + r.headers)).toEqual([]);
    }
  }, 120_000);
});

/** `/readyz`'s answer: status and body. */
async function readyz(g: ObservedGateway): Promise<{ status: number; text: string }> {
  const r = await fetch(`${g.base}/readyz`);
  return { status: r.status, text: await r.text() };
}

describe('/readyz and a store that cannot be written', () => {
  it('a read-only SQLite file: the store opens and reads, /readyz is 503 with the reason alone', async () => {
    const dir = tempDir();
    const db = join(dir, 'audit.db');
    await (await openSqliteStore({ path: db })).close();
    // Mode bits do not stop root: then the file is made immutable as well (chattr, ext4 and most others).
    chmodSync(db, 0o400);
    const root = process.getuid?.() === 0;
    if (root) execFileSync('chattr', ['+i', db]);
    try {
      const g = await gateway(['--store', db, '--http', '0', '--quiet', '--', process.execPath, COUNTING]);
      const r = await readyz(g);
      expect(r).toEqual({ status: 503, text: 'not ready: the store cannot be written\n' });
      expect((await fetch(`${g.base}/healthz`)).status).toBe(200);
      expect(await g.stop()).toBe(0);
    } finally {
      if (root) execFileSync('chattr', ['-i', db]);
    }
  }, 60_000);
});

describeWith('/readyz and a PostgreSQL store', findPgBin(), 'PostgreSQL server', missingMessage(prereq('postgresql')), (bin) => {
  it('503 while the server is read-only and once it is stopped, 200 in between; the reason alone', async () => {
    const pg = await startThrowawayPg({ bin });
    try {
      const g = await gateway(['--store', pg.url, '--http', '0', '--quiet', '--', process.execPath, COUNTING]);
      expect(await readyz(g)).toEqual({ status: 200, text: 'ready\n' });
      // As after a failover to a standby: reads answer, writes are refused.
      const { default: pgDriver } = await import('pg');
      const admin = new pgDriver.Client({ connectionString: pg.url });
      // Its connection ends with the server's, below or when a failing test stops it.
      admin.on('error', () => {});
      await admin.connect();
      const readOnly = async (on: boolean) => {
        await admin.query(on ? 'ALTER SYSTEM SET default_transaction_read_only = on' : 'ALTER SYSTEM RESET default_transaction_read_only');
        await admin.query('SELECT pg_reload_conf()');
      };
      await readOnly(true);
      expect(await eventually(async () => ((await readyz(g)).status === 503 ? readyz(g) : undefined), 'readyz 503, read-only')).toEqual({
        status: 503,
        text: 'not ready: the store cannot be written\n',
      });
      await readOnly(false);
      await eventually(async () => ((await readyz(g)).status === 200 ? true : undefined), 'readyz 200 again');
      await admin.end();
      pg.stop();
      const down = await readyz(g);
      expect(down.status).toBe(503);
      expect(down.text).toMatch(/^not ready: the store (cannot be written|does not answer)\n$/);
      await g.stop();
    } finally {
      try {
        pg.stop();
      } catch {
        // Stopped above.
      }
    }
  }, 120_000);
});

describe('--metrics HOST:PORT', () => {
  it('serves /metrics, /healthz and /readyz on a listener of its own, for a stdio gateway too', async () => {
    const port = await freePort();
    const g = await gateway(['--no-store', '--metrics', `127.0.0.1:${port}`, '--', process.execPath, COUNTING]);
    expect(g.url).toBe(`http://127.0.0.1:${port}`);
    const metrics = await fetch(`${g.url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await metrics.text()).toContain('tool_envelope_upstream_up{upstream="upstream"} 1');
    expect((await fetch(`${g.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${g.url}/mcp`)).status).toBe(404);
    expect(await g.stop()).toBe(0);
    // --metrics alone needs the --http listener; a non-loopback listener of its own needs --insecure-no-auth.
    await expect(startGateway(['--no-store', '--metrics', '--', process.execPath, COUNTING])).rejects.toThrow(
      /--metrics alone serves them on the --http listener/,
    );
    await expect(startGateway(['--no-store', '--metrics', '0.0.0.0:9464', '--', process.execPath, COUNTING])).rejects.toThrow(/reachable from other machines/);
  }, 60_000);
});

describe('structured logs', () => {
  it('--log-format json: every line parses with a level and stable fields; --log-calls adds one per call; no secret of a call is in any line', async () => {
    const dir = tempDir();
    const token = 'tok-8c1f0e8e5a2b4c7d9e0f1a2b3c4d5e6f';
    const secret = 'sk-live-51HxSECRETvalue0123456789abcdef';
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ tokens: [{ sha256: tokenDigest(token), principal: 'user:alice' }] }));
    const g = await gateway([
      '--store',
      join(dir, 'audit.db'),
      '--http',
      '0',
      '--auth',
      'tokens',
      join(dir, 'tokens.json'),
      '--metrics',
      '--log-format',
      'json',
      '--log-calls',
      '--',
      process.execPath,
      COUNTING,
    ]);
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const client = new Client({ name: 'logs-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    await client.callTool({ name: 'write_note', arguments: { text: secret } });
    await client.callTool({ name: 'read_notes', arguments: { api_key: secret } });
    // A wrong token: refused and counted, its value in no line.
    const wrong = await fetch(g.url, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: '{}' });
    expect(wrong.status).toBe(401);
    const metrics = await (await fetch(`${g.base}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    expect(metrics).toContain('tool_envelope_auth_failures_total{reason="invalid_token"} 1');
    // Without a valid token the metrics are refused, as MCP is.
    expect((await fetch(`${g.base}/metrics`)).status).toBe(401);
    await client.close();
    expect(await g.stop()).toBe(0);

    const lines = g
      .stderr()
      .split('\n')
      .filter((l) => l !== '');
    expect(lines.length).toBeGreaterThan(3);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const p of parsed) {
      expect(['debug', 'info', 'warn', 'error']).toContain(p.level);
      expect(typeof p.component).toBe('string');
      expect(typeof p.msg).toBe('string');
      expect(typeof p.time).toBe('string');
    }
    const calls = parsed.filter((p) => p.component === 'call');
    expect(calls.map((c) => [c.tool, c.status, c.principal])).toEqual([
      ['write_note', 'ok', 'user:alice'],
      ['read_notes', 'ok', 'user:alice'],
    ]);
    for (const c of calls) {
      expect(typeof c.latencyMs).toBe('number');
      expect(c.toolCallId).toMatch(/\S/);
      expect(c.traceId).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(parsed.some((p) => p.component === 'upstream' && p.upstream === 'upstream')).toBe(true);
    expect(parsed.some((p) => p.msg === 'shutting down')).toBe(true);
    for (const l of lines) {
      expect(l).not.toContain(secret);
      expect(l).not.toContain(token);
    }
  }, 60_000);

  it('--log-format json: why the gateway stops is a fatal line, written with --quiet too', async () => {
    const io = memoryIo({ PATH: process.env.PATH ?? '' });
    // A directory is no SQLite file: the store cannot open.
    expect(await run(['--store', tempDir(), '--http', '0', '--quiet', '--log-format', 'json', '--', process.execPath, COUNTING], io)).toBe(2);
    const lines = io
      .err()
      .split('\n')
      .filter((l) => l !== '');
    expect(lines.length).toBe(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'fatal', component: 'gateway', msg: expect.stringMatching(/^cannot open the store /) });
  });

  it('--log-level filters the text lines; a bad value is a usage error', async () => {
    const quietG = await gateway(['--no-store', '--http', '0', '--log-level', 'warn', '--', process.execPath, COUNTING]);
    expect(await quietG.stop()).toBe(0);
    expect(quietG.stderr()).toBe('');
    const chatty = await gateway(['--no-store', '--http', '0', '--', process.execPath, COUNTING]);
    expect(await chatty.stop()).toBe(0);
    expect(chatty.stderr()).toContain('tool-envelope gateway: shutting down');
    await expect(startGateway(['--no-store', '--http', '0', '--log-level', 'loud', '--', process.execPath, COUNTING])).rejects.toThrow(
      /--log-level must be one of/,
    );
  }, 60_000);
});

describe('traces from the CLI', () => {
  const receivers: Server[] = [];
  afterAll(() => {
    for (const r of receivers) r.close();
  });

  /**
   * Runs a gateway with `env` toward an OTLP receiver of the test, makes one call with a
   * traceparent, stops it (which flushes the batch) and returns what the receiver got.
   */
  async function exported(env: Record<string, string>): Promise<{ path: string; type: string; body: Buffer }[]> {
    const bodies: { path: string; type: string; body: Buffer }[] = [];
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        bodies.push({ path: req.url ?? '', type: String(req.headers['content-type']), body: Buffer.concat(chunks) });
        // An empty ExportTraceServiceResponse reads the same in either encoding's length.
        res.writeHead(200, { 'content-type': String(req.headers['content-type']) }).end(req.headers['content-type'] === 'application/json' ? '{}' : '');
      });
    });
    receivers.push(receiver);
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as { port: number }).port;
    const g = await gateway(['--no-store', '--http', '0', '--quiet', '--', process.execPath, COUNTING], {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_SERVICE_NAME: 'gateway-under-test',
      ...env,
    });
    const { client } = await httpClient(g.url);
    await client.callTool({ name: 'read_notes', arguments: {}, _meta: { traceparent: `00-${TRACE_ID}-${PARENT}-01` } });
    await client.close();
    expect(await g.stop()).toBe(0);
    return bodies;
  }
  const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
  const PARENT = '00f067aa0ba902b7';

  it('http/json: execute_tool spans arrive as JSON, the caller traceparent as parent', async () => {
    const bodies = await exported({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const traces = bodies.filter((b) => b.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    for (const b of traces) expect(b.type).toBe('application/json');
    const hex = (id: string) => (/^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex'));
    type Span = { name: string; traceId: string; parentSpanId: string; attributes: { key: string; value: { stringValue?: string } }[] };
    type Export = { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: Span[] }[] }[] };
    const exports = traces.map((b) => JSON.parse(b.body.toString('utf8')) as Export);
    const spans = exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => ({ span, resource: r.resource })))));
    const call = spans.find((s) => s.span.name === 'execute_tool read_notes');
    expect(call).toBeDefined();
    expect(hex(call!.span.traceId)).toBe(TRACE_ID);
    expect(hex(call!.span.parentSpanId)).toBe(PARENT);
    expect(call!.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue).toBe('gateway-under-test');
    expect(call!.span.attributes.find((a) => a.key === 'gen_ai.tool.name')?.value.stringValue).toBe('read_notes');
  }, 60_000);

  it('http/protobuf, the default and as asked by OTEL_EXPORTER_OTLP_TRACES_PROTOCOL over the shared variable: the body decodes as an ExportTraceServiceRequest', async () => {
    const envs: Record<string, string>[] = [{}, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }];
    for (const env of envs) {
      const traces = (await exported(env)).filter((b) => b.path === '/v1/traces');
      expect(traces.length, JSON.stringify(env)).toBeGreaterThan(0);
      for (const b of traces) expect(b.type).toBe('application/x-protobuf');
      const call = traces.flatMap((b) => decodeTraceExport(b.body)).find((s) => s.name === 'execute_tool read_notes');
      expect(call).toMatchObject({
        traceId: TRACE_ID,
        parentSpanId: PARENT,
        attributes: { 'gen_ai.tool.name': 'read_notes' },
        resource: { 'service.name': 'gateway-under-test' },
      });
      expect(call!.spanId).toMatch(/^[0-9a-f]{16}$/);
    }
    // The reader refuses what is not protobuf (a JSON body).
    expect(() => decodeTraceExport(Buffer.from('{"resourceSpans":[]}'))).toThrow(/protobuf/);
  }, 60_000);

  it('loads no SDK, metrics or logging library when neither the flags nor the variables ask (the built CLI, its imports recorded)', async () => {
    const main = join(repoRoot, 'dist/src/cli/main.js');
    const imports = async (args: string[], env: Record<string, string>): Promise<string> => {
      const file = join(tempDir(), 'imports.txt');
      writeFileSync(file, '');
      const child = spawn(
        process.execPath,
        [
          '--import',
          join(repoRoot, 'src/cli/test-support/record-imports.mjs'),
          main,
          'gateway',
          '--no-store',
          '--http',
          '0',
          '--quiet',
          ...args,
          '--',
          process.execPath,
          COUNTING,
        ],
        { env: { PATH: process.env.PATH ?? '', RECORD_IMPORTS: file, ...env }, stdio: ['ignore', 'pipe', 'ignore'] },
      );
      children.push(child);
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await eventually(async () => (out.includes('MCP endpoint') ? true : undefined), 'the built gateway starts');
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      return readFileSync(file, 'utf8');
    };
    const json = '@opentelemetry/exporter-trace-otlp-http';
    const proto = '@opentelemetry/exporter-trace-otlp-proto';
    const optional = ['@opentelemetry/sdk-trace-base', json, proto, '@opentelemetry/resources', 'prom-client', 'pino'];
    const plain = await imports([], {});
    expect(plain).toContain('@modelcontextprotocol/server');
    expect(optional.filter((m) => plain.split('\n').includes(m))).toEqual([]);
    // Not even @opentelemetry/api: tracing's module is imported only when OTEL_* variables ask.
    expect(plain.split('\n').filter((m) => m.startsWith('@opentelemetry/'))).toEqual([]);
    // Only the exporter of the protocol asked (http/protobuf by default).
    const asked = await imports(['--metrics', '--log-format', 'json'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(optional.filter((m) => asked.split('\n').includes(m))).toEqual(optional.filter((m) => m !== json));
    const askedJson = await imports([], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(optional.filter((m) => askedJson.split('\n').includes(m))).toEqual(['@opentelemetry/sdk-trace-base', json, '@opentelemetry/resources']);
  }, 60_000);

  it("the log line naming the trace endpoint shows neither its user and password nor its query string's secrets", async () => {
    const g = await gateway(['--no-store', '--http', '0', '--', process.execPath, COUNTING], {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://ops:hunter2@127.0.0.1:9/v1/traces?token=abc123secret&region=eu',
    });
    expect(g.stderr()).toContain('traces: OTLP/HTTP (http/protobuf) to http://***@127.0.0.1:9/v1/traces?token=[REDACTED]&region=eu as tool-envelope-gateway');
    expect(g.stderr()).not.toMatch(/hunter2|abc123secret/);
    expect(await g.stop()).toBe(0);
  }, 60_000);

  it('reads the standard variables: none set or OTEL_TRACES_EXPORTER=none is no tracing; an exporter it lacks is an error', () => {
    expect(traceExportFrom({})).toBeUndefined();
    expect(traceExportFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(traceExportFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(traceExportFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toMatchObject({
      url: 'http://c:4318/v1/traces',
      serviceName: 'tool-envelope-gateway',
    });
    expect(traceExportFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom', OTEL_EXPORTER_OTLP_HEADERS: 'x-key=a%20b' })).toMatchObject({
      url: 'http://c:4318/custom',
      headers: { 'x-key': 'a b' },
    });
    expect(traceExportFrom({ OTEL_TRACES_EXPORTER: 'zipkin' })).toMatch(/not supported/);
    // The protocol: http/protobuf unless asked, the traces variable over the shared one; gRPC refused.
    const at = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(traceExportFrom(at)).toMatchObject({ protocol: 'http/protobuf' });
    expect(traceExportFrom({ ...at, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toMatchObject({ protocol: 'http/json' });
    expect(traceExportFrom({ ...at, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })).toMatchObject({
      protocol: 'http/protobuf',
    });
    expect(traceExportFrom({ ...at, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toBe(
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc is not supported: only http/protobuf (the default) or http/json',
    );
    expect(traceExportFrom({ ...at, OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toMatch(/^OTEL_EXPORTER_OTLP_PROTOCOL=thrift is not an OTLP protocol/);
  });
});
