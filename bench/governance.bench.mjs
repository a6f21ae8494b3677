// Governance costs: authentication per gateway request (bearer tokens; OAuth JWTs with a cached
// JWKS served on 127.0.0.1), goal <= 20 µs CPU per call, and the governance pipeline beside the
// governed path it replaced (the pre-pipeline src/runtime/governed.ts, compiled from git in the
// same run), goal: no slower, as CPU time per call. Loaded by bench/run.mjs; alone after `npm run build`:
// `node --expose-gc bench/governance.bench.mjs [--quick]`.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stop as stopEsbuild, transform } from 'esbuild';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const AUTH_GOAL_US = 20;
// The last commit whose governed runtime composed policy, idempotency and audit itself.
const BEFORE_PIPELINE = '5fee4c2';

const dist = (p) => pathToFileURL(path.join(root, 'dist/src', p)).href;

/** The pre-pipeline governed runtime, built beside the current dist so that its imports resolve. */
async function legacyGoverned() {
  const source = execFileSync('git', ['show', `${BEFORE_PIPELINE}:src/runtime/governed.ts`], { cwd: root, encoding: 'utf8' });
  // The contract modules moved to core/contracts/ since then; the core's root exports the same functions.
  // The forwarding modules it imported are gone: store/shared.js, runtime/policy.js and runtime/idempotency.js.
  const moved = source
    .replace("from '../core/contextos.js'", "from '../core/index.js'")
    .replace(
      "import { freezeAuditRecord, newAuditId } from '../store/shared.js';",
      "import { freezeAuditRecord } from '../store/audit-body.js';\nimport { newAuditId } from '../store/ids.js';",
    )
    .replace("from './idempotency.js'", "from '../governance/idempotency.js'")
    .replace("from './policy.js'", "from '../governance/policy.js'");
  const { code } = await transform(moved, { loader: 'ts', format: 'esm', target: 'node20' });
  await stopEsbuild();
  const file = path.join(root, 'dist/src/runtime/governed.before-pipeline.bench.js');
  writeFileSync(file, code);
  return { mod: await import(pathToFileURL(file).href), cleanup: () => rmSync(file, { force: true }) };
}

async function timeAsync(ctx, fn, rounds) {
  // Interleaved rounds of awaited calls; per-call CPU-bound time (no I/O happens inside).
  const results = [];
  for (let r = 0; r < rounds; r++) results.push((await ctx.measureAsync(fn, { batches: ctx.quick ? 21 : 61 })).medianNs);
  return ctx.median(results);
}

const WHEN_GOAL_US = 5;

/**
 * A 50-rule policy with `when` conditions beside the same policy without them (#38), CPU per
 * decision through resolveCompiledApproval, the pipeline's decision function. Ten tools, five
 * rules each: four with the conditions operators write most (a path prefix, a URL host, a role, an
 * amount) and a last one without; the calls meet none of the conditions, so each evaluates the four
 * of its tool before the fifth rule decides. Without conditions the first rule of the tool decides.
 */
async function whenConditions(ctx) {
  const { compilePolicy, resolveCompiledApproval } = await import(dist('governance/policy.js'));
  const tools = ['write_file', 'read_file', 'fetch', 'transfer', 'search', 'deploy', 'send_mail', 'query_db', 'run_job', 'notes'];
  const conditions = [
    "!within(args.path, '/srv/shared')",
    "host(args.url) == 'example.com' || host(args.url).endsWith('.example.com')",
    "'research' in identity.roles",
    'has(args.amount) && toNumber(args.amount) > 1000',
  ];
  const doc = (withWhen) => ({
    version: 1,
    default: 'deny',
    rules: Array.from({ length: 50 }, (_, i) => {
      const last = i % 5 === 4;
      const rule = { name: `r${i}`, match: { tool: tools[Math.floor(i / 5)] }, effect: last ? 'allow' : 'deny' };
      if (withWhen && !last) rule.when = conditions[i % 5];
      return rule;
    }),
  });
  const withWhen = compilePolicy(doc(true));
  const without = compilePolicy(doc(false));
  const calls = tools.map((tool, i) => ({
    tool,
    ceiling: 'network',
    requested: 'network',
    principalChain: [{ kind: 'user', id: `u${i}`, tenant_id: 'acme' }],
    args: { path: `/srv/shared/reports/q${i}.txt`, url: `https://partner${i}.test/v1`, amount: 10 * i },
    identity: { principal: `user:u${i}`, tenant: 'acme', roles: ['dev'], claims: { email: `u${i}@example.com` } },
    now: Date.now(),
    newId: () => 'pd_bench',
  }));
  for (const c of calls) {
    const d = resolveCompiledApproval(c, withWhen);
    if (d.effect !== 'allow' || d.rule !== `r${tools.indexOf(c.tool) * 5 + 4}`)
      throw new Error(`when bench: ${c.tool} decided ${d.effect} by ${d.rule}: ${d.reason}`);
  }
  let i = 0;
  let j = 0;
  const decideWith = () => resolveCompiledApproval(calls[i++ % 10], withWhen);
  const decideWithout = () => resolveCompiledApproval(calls[j++ % 10], without);
  // Wall time in interleaved batches (ctx.compare), which also warms both up...
  const wall = await ctx.compare(decideWith, decideWithout, { batches: ctx.quick ? 61 : 201 });
  // ...and the goal's measure, CPU time (process.cpuUsage: a machine shared with other processes
  // inflates wall time far more), over interleaved rounds A B then B A, median of the rounds.
  const perRound = ctx.quick ? 5_000 : 20_000;
  const cpuRound = (fn) => {
    const c0 = process.cpuUsage();
    for (let k = 0; k < perRound; k++) fn();
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / perRound;
  };
  const a = [];
  const b = [];
  for (let r = 0; r < (ctx.quick ? 6 : 20); r++) {
    if (r % 2 === 0) {
      a.push(cpuRound(decideWith));
      b.push(cpuRound(decideWithout));
    } else {
      b.push(cpuRound(decideWithout));
      a.push(cpuRound(decideWith));
    }
  }
  const withNs = ctx.median(a);
  const withoutNs = ctx.median(b);
  const addedUs = (withNs - withoutNs) / 1000;
  return {
    group: 'governance: policy when conditions',
    name: 'a 50-rule policy with when conditions vs the same policy without them, CPU per decision',
    value: withNs / 1000,
    unit: 'µs',
    anchor: 'the same 50 rules without when',
    anchorValue: withoutNs / 1000,
    ratio: withNs / withoutNs,
    goal: `<= ${WHEN_GOAL_US} µs added`,
    pass: addedUs <= WHEN_GOAL_US,
    note: `added ${addedUs.toFixed(2)} µs CPU per decision (${(addedUs / 4).toFixed(2)} µs per condition): each call evaluates 4 conditions (within, host twice, a role, has+toNumber) before its tool's fifth rule decides; CPU time over interleaved rounds of ${perRound} decisions, median; wall time in interleaved batches (ctx.compare): ${(wall.a.medianNs / 1000).toFixed(2)} vs ${(wall.b.medianNs / 1000).toFixed(2)} µs`,
  };
}

export async function run(ctx) {
  const rows = [];
  const { tokenAuthenticator, tokenDigest, oauthAuthenticator } = await import(dist('mcp/serve/auth.js'));
  const tokens = tokenAuthenticator({
    tokens: Array.from({ length: 1000 }, (_, i) => ({ sha256: tokenDigest(`token-${i}`), principal: `user:u${i}`, tenant: 't' })),
  });
  const header = 'Bearer token-737';
  if ((await tokens.authenticate(header)).principal?.id !== 'u737') throw new Error('bearer token did not authenticate');
  const bearerNs = await timeAsync(ctx, () => tokens.authenticate(header), 3);
  rows.push({
    group: 'governance: authentication per request',
    name: 'bearer token (1 000 tokens in the file)',
    value: bearerNs / 1000,
    unit: 'µs',
    goal: `<= ${AUTH_GOAL_US} µs`,
    pass: bearerNs / 1000 <= AUTH_GOAL_US,
  });

  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  let fetches = 0;
  const jwks = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise((ok) => jwks.listen(0, '127.0.0.1', ok));
  try {
    const issuer = `http://127.0.0.1:${jwks.address().port}`;
    const audience = 'http://127.0.0.1:3333/mcp';
    const sign = () =>
      new SignJWT({ tenant_id: 'acme', scope: 'mcp' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject('carol')
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey);
    const jwt = `Bearer ${await sign()}`;
    const cached = oauthAuthenticator({ issuer, audience, jwksUrl: `${issuer}/jwks` });
    if ((await cached.authenticate(jwt)).principal?.id !== 'carol') throw new Error('OAuth token did not authenticate');
    const oauthNs = await timeAsync(ctx, () => cached.authenticate(jwt), 3);
    rows.push({
      group: 'governance: authentication per request',
      name: "OAuth JWT, cached JWKS, a session's repeated token",
      value: oauthNs / 1000,
      unit: 'µs',
      goal: `<= ${AUTH_GOAL_US} µs`,
      pass: oauthNs / 1000 <= AUTH_GOAL_US,
    });
    // Every call a new token: the signature check itself (ES256), against the JWKS fetched once.
    const uncached = oauthAuthenticator({ issuer, audience, jwksUrl: `${issuer}/jwks`, cacheSize: 0 });
    await uncached.authenticate(jwt);
    const verifyNs = await timeAsync(ctx, () => uncached.authenticate(jwt), 2);
    rows.push({
      group: 'governance: authentication per request',
      name: 'OAuth JWT, cached JWKS, signature verified every call (reference, no goal)',
      value: verifyNs / 1000,
      unit: 'µs',
      note: `JWKS fetched ${fetches} times in all (once per authenticator: jose caches it)`,
    });
  } finally {
    await new Promise((ok) => jwks.close(ok));
  }

  rows.push(await whenConditions(ctx));

  // The pipeline beside the governed path it replaced: one allowed read_only call, memory store; the
  // tool is a trivial handler, so what is measured is the governance around it. Like with like: both
  // paths run the same runtime, policy (the default rules), idempotency and store modules from dist/,
  // each its own governed.ts; measured as CPU time per call (process.cpuUsage, which a loaded machine
  // inflates far less than wall time) over interleaved rounds, A B then B A, median of the rounds.
  const { createRuntime, defineTool, createGovernedRuntime } = await import(dist('runtime/index.js'));
  const { createMemoryStore } = await import(dist('store/index.js'));
  const { operatorKeyFromSecret } = await import(dist('store/operator-key.js'));
  const tool = defineTool({ name: 'notes.read', description: 'Reads.', approvalMode: 'read_only', handler: async () => ({ ok: 1 }) });
  const legacy = await legacyGoverned();
  try {
    const chain = [{ kind: 'user', id: 'alice' }];
    const key = operatorKeyFromSecret(Buffer.alloc(32, 1));
    const pair = (before, now) => ({
      before: legacy.mod.createGovernedRuntime({ runtime: createRuntime({ tools: [tool] }), store: createMemoryStore(), principalChain: chain, ...before }),
      now: createGovernedRuntime({ runtime: createRuntime({ tools: [tool] }), store: createMemoryStore(), principalChain: chain, operatorKey: key, ...now }),
    });
    const args = { id: 'n1' };
    const perCall = ctx.quick ? 2_000 : 10_000;
    const cpuRound = async (rt) => {
      const c0 = process.cpuUsage();
      for (let i = 0; i < perCall; i++) await rt.invoke('notes.read', args);
      const c = process.cpuUsage(c0);
      return ((c.user + c.system) * 1000) / perCall;
    };
    const ab = async ({ before, now }) => {
      for (let i = 0; i < 2; i++) {
        await cpuRound(before);
        await cpuRound(now);
      }
      const a = [];
      const b = [];
      for (let r = 0; r < (ctx.quick ? 4 : 16); r++) {
        if (r % 2 === 0) {
          a.push(await cpuRound(before));
          b.push(await cpuRound(now));
        } else {
          b.push(await cpuRound(now));
          a.push(await cpuRound(before));
        }
      }
      await before.flush();
      await now.flush();
      await before.close();
      await now.close();
      return { beforeNs: ctx.median(a), nowNs: ctx.median(b) };
    };
    const load = () => (process.platform === 'linux' ? readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') : 'n/a');
    const bare = await ab(pair({ audit: false }, { audit: false }));
    rows.push({
      group: 'governance: pipeline vs the governed path it replaced',
      name: 'governed invoke through the pipeline (allowed read_only call, no audit), CPU per call',
      value: bare.nowNs / 1000,
      unit: 'µs',
      anchor: `governed invoke before the pipeline (${BEFORE_PIPELINE})`,
      anchorValue: bare.beforeNs / 1000,
      ratio: bare.nowNs / bare.beforeNs,
      goal: '<= 1.00x (no slower)',
      pass: bare.nowNs <= bare.beforeNs * 1.0,
      note: `interleaved rounds of ${perCall} awaited calls, CPU time (process.cpuUsage), median; the pre-pipeline runtime/governed.ts is compiled from git with esbuild into dist/ and uses the same runtime, policy, idempotency and store modules; load average ${load()}`,
    });
    // No row with an audit log: it would not compare like with like. The pipeline writes two records
    // per call (`started` before the tool runs, so that a crash leaves an interrupted record, then the
    // outcome) and by default answers after the commit, where the old path queued one record; and the
    // memory store's cost of completing a started record grows with the records it holds.
  } finally {
    legacy.cleanup();
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { makeContext } = await import('./run.mjs');
  const rows = await run(makeContext(process.argv.includes('--quick')));
  for (const r of rows)
    console.log(
      `${r.name}: ${r.value.toFixed(2)} ${r.unit}${r.anchorValue !== undefined ? ` (anchor ${r.anchorValue.toFixed(2)}, ratio ${r.ratio.toFixed(2)})` : ''}${r.pass === false ? '  GOAL NOT MET' : ''}`,
    );
}
