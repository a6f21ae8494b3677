// A policy reloaded under load (#38 point 7): a real gateway over HTTP before counting-server.mjs,
// real SDK clients, a real SQLite store. Calls run concurrently while the policy file is rewritten and
// reloaded again and again (two good policies and a bad one in turn); every call's audit record names
// the digest of one of the two good policies and carries that policy's decision (no call saw half a
// policy), and a bad reload leaves the policy in force deciding.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../governance/policy-load.js';
import { PolicyReloader } from '../../governance/policy-reload.js';
import type { AuditRecord } from '../../store/types.js';
import { tempDir } from '../test-support/harness.js';
import { type CountingGateway, countingGateway } from '../test-support/counting-gateway.js';

// Two policies that decide write_note differently, over several rules each: a swap that mixed them
// would decide with one's rules and name the other's digest.
const ALLOWS = `version: 1
rules:
  - { name: a-reads, match: { tool: read_notes }, effect: allow }
  - { name: a-notes, match: { tool: write_note }, when: "size(args.text) < 100", effect: allow }
  - { name: a-rest, effect: deny }
`;
const DENIES = `version: 1
rules:
  - { name: b-reads, match: { tool: read_notes }, effect: allow }
  - { name: b-notes, match: { tool: write_note }, effect: deny, reason: notes are closed }
  - { name: b-rest, effect: deny }
`;
const BAD = `version: 1
rules:
  - { name: broken, match: { tool: write_note }, when: "args.text +", effect: allow }
`;

let rig: CountingGateway;
let file: string;
let reloader: PolicyReloader;
const refused: string[] = [];

beforeAll(async () => {
  rig = await countingGateway(ALLOWS);
  file = join(tempDir(), 'policy.yaml');
  writeFileSync(file, ALLOWS);
  reloader = new PolicyReloader(
    { file, watch: false, apply: (p) => rig.governance.pipeline.usePolicy(p), onRefused: (e) => refused.push(e.message) },
    rig.governance.pipeline.policy as ReturnType<typeof parsePolicy>,
  );
});
afterAll(async () => {
  reloader.close();
  await rig.close();
});

async function client(): Promise<Client> {
  const c = new Client({ name: 'reload-test', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(rig.endpoint.url)));
  return c;
}

async function records(): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await rig.store.listAudit({ tool: 'write_note' }, { limit: 500, ...(cursor && { cursor }) });
    out.push(...page.records);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

describe('reloading the policy while calls run', () => {
  it('gives every call one whole policy: its record names that policy and carries its decision', async () => {
    const allows = parsePolicy(ALLOWS, 'yaml').digest;
    const denies = parsePolicy(DENIES, 'yaml').digest;
    const clients = await Promise.all([client(), client(), client(), client()]);
    const answers: boolean[] = [];
    try {
      for (let round = 0; round < 12; round++) {
        const calls = clients.flatMap((c, i) =>
          Array.from({ length: 6 }, (_, j) =>
            c
              .callTool({ name: 'write_note', arguments: { text: `r${round}c${i}n${j}` } })
              .then((r) => answers.push((r.structuredContent as { ok: boolean }).ok)),
          ),
        );
        // Rewritten and reloaded while the round's calls are in flight: good, bad, then the other good one.
        const next = round % 2 === 0 ? DENIES : ALLOWS;
        const reloads = (async () => {
          writeFileSync(file, BAD);
          expect(await reloader.reload()).toBe('refused');
          writeFileSync(file, next);
          expect(await reloader.reload()).toBe('applied');
        })();
        await Promise.all([...calls, reloads]);
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
    expect(answers).toHaveLength(12 * 24);
    const recs = await records();
    expect(recs).toHaveLength(12 * 24);
    const seen = { [allows]: 0, [denies]: 0 };
    for (const r of recs) {
      const d = r.policyDecision!;
      expect([allows, denies]).toContain(d.policyDigest);
      if (d.policyDigest === allows) expect({ effect: d.effect, rule: d.rule, status: r.status }).toEqual({ effect: 'allow', rule: 'a-notes', status: 'ok' });
      else expect({ effect: d.effect, rule: d.rule, status: r.status }).toEqual({ effect: 'deny', rule: 'b-notes', status: 'blocked' });
      seen[d.policyDigest as string]!++;
    }
    // Both policies decided calls, and the answers agree with the records.
    expect(seen[allows]).toBeGreaterThan(0);
    expect(seen[denies]).toBeGreaterThan(0);
    expect(answers.filter(Boolean)).toHaveLength(seen[allows]!);
    expect(rig.ran('write_note')).toBe(seen[allows]);
    expect(refused).toHaveLength(12);
    expect(refused[0]).toMatch(/\/rules\/0\/when/);
  });

  it('keeps the policy in force when a reload is refused', async () => {
    writeFileSync(file, DENIES);
    await reloader.reload();
    const denies = reloader.policy.digest;
    writeFileSync(file, BAD);
    expect(await reloader.reload()).toBe('refused');
    const c = await client();
    try {
      const r = await c.callTool({ name: 'write_note', arguments: { text: 'after' } });
      expect(r.structuredContent).toMatchObject({ ok: false, error: { detail: 'Blocked by policy: notes are closed' } });
    } finally {
      await c.close();
    }
    const last = (await records()).find((r) => (r.callEnvelope as { args?: { text?: string } }).args?.text === 'after');
    expect(last?.policyDecision?.policyDigest).toBe(denies);
    expect(rig.governance.pipeline.policy).toBe(reloader.policy);
  });
});
