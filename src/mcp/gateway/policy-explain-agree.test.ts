// `policy explain` and the gateway decide alike (#38, must hold): on 10 000 generated calls, each
// described by the gateway's own describeCall (identity, annotations, requested mode from `_meta`) and
// run through its GatewayGovernance (the pipeline every gateway call goes through; a real in-memory
// store, signed approval requests), the gateway's answer is the decision `explainInput` gives: run for
// allow, 'Blocked by policy: <reason>' for deny and for an allowed call whose tool needs a mode above
// the effective one (explain's `gate`), paused for require-approval; a hidden tool is one the
// explanation denies.
import fc from 'fast-check';
import type { ApprovalMode, JsonObject } from 'tool-envelope/core';
import { success } from 'tool-envelope/core';
import { describe, expect, it } from 'vitest';
import type { Identity } from '../../governance/identity.js';
import { explainInput } from '../../governance/policy-explain.js';
import { parsePolicy } from '../../governance/policy-load.js';
import { createMemoryStore } from '../../store/index.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Upstream } from '../upstream/upstream.js';
import { META_KEYS } from '../wire/meta-keys.js';
import { describeCall, type ToolRoute } from './calls.js';
import { GatewayGovernance } from './governor.js';
import { hidesTool } from './hidden-tools.js';

const POLICY = `version: 1
rules:
  - { name: admin-deletes, match: { tool: delete_item }, when: "'admin' in identity.roles", effect: allow }
  - { name: no-deletes, match: { tool: delete_item }, effect: deny, hide: true }
  - name: outside-shared
    match: { tool: write_file }
    when: "!within(args.path, '/srv/shared')"
    effect: deny
    reason: writes stay under /srv/shared
  - name: our-hosts
    match: { tool: fetch }
    when: "!(host(args.url) == 'example.com' || host(args.url).endsWith('.example.com') || 'research' in identity.roles)"
    effect: deny
  - name: large-transfers
    match: { tool: transfer }
    when: "toNumber(string(args.amount)) > 1000.0"
    effect: require-approval
  - { name: destructive-by-annotation, when: "has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint == true", effect: require-approval }
  - { name: no-network-for-tenant-b, match: { tenant: b, mode: network }, effect: deny }
`;
const MODES: ApprovalMode[] = ['read_only', 'local_write', 'network', 'delegated', 'destructive'];

describe('policy explain and the gateway', () => {
  it('agree on 10 000 generated calls (fast-check)', async () => {
    const policy = parsePolicy(POLICY, 'yaml');
    const governance = new GatewayGovernance({
      store: createMemoryStore(),
      policy,
      audit: false,
      approvalPollMs: 0,
      operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 9)),
    });
    const upstream = { name: 'up', spec: {} } as unknown as Upstream;
    const segment = fc.constantFrom('srv', 'shared', '..', '.', '', '%2e%2e', 'etc', 'a.txt', '%2F');
    const call = fc.record({
      tool: fc.constantFrom('write_file', 'fetch', 'transfer', 'delete_item', 'other'),
      ceiling: fc.constantFrom(...MODES),
      requested: fc.option(fc.constantFrom(...MODES), { nil: undefined }),
      path: fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join('/')}`),
      url: fc.oneof(fc.webUrl(), fc.constantFrom('https://example.com', 'https://a.EXAMPLE.com:8', 'https://example.com.evil.org', 'nonsense')),
      amount: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom('1000', '1000.5', 'x', '')),
      roles: fc.subarray(['research', 'admin']),
      tenant: fc.constantFrom('a', 'b'),
      destructive: fc.boolean(),
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(call, async (c) => {
        const identity: Identity = { principal: { kind: 'user', id: `u${n++}`, tenant_id: c.tenant }, roles: c.roles, via: 'token' };
        const annotations: JsonObject = c.destructive ? { destructiveHint: true } : { readOnlyHint: true };
        const route: ToolRoute = { upstream, upstreamTool: c.tool, tool: { name: c.tool, inputSchema: { type: 'object' }, annotations }, mode: c.ceiling };
        const params: Record<string, unknown> & { name: string } = { name: c.tool, arguments: { path: c.path, url: c.url, amount: c.amount } };
        if (c.requested !== undefined) params._meta = { [META_KEYS.requestedMode]: c.requested };
        const gatewayCall = describeCall(params, route, { identity, clientName: 'prop-client' });
        const { decision, gate } = explainInput(policy, {
          tool: gatewayCall.tool,
          ceiling: gatewayCall.ceiling,
          requested: gatewayCall.requestedMode ?? gatewayCall.ceiling,
          principalChain: gatewayCall.principalChain,
          verifiedPrincipals: gatewayCall.verifiedPrincipals!,
          args: gatewayCall.args,
          identity: gatewayCall.identity!,
          toolAnnotations: annotations,
          evidenceRefs: [],
        });
        if (hidesTool(policy, c.tool, annotations, identity)) {
          // Denied by the hide rule, or before any rule (a mode above the ceiling): hidden either way.
          expect(decision.effect).toBe('deny');
          expect([undefined, 'no-deletes']).toContain(decision.rule);
          return;
        }
        let ran = false;
        const governed = await governance.run(gatewayCall, async () => {
          ran = true;
          return { outcome: success({ ran: true }) };
        });
        const outcome = governed.outcome;
        if (decision.effect === 'allow' && gate === undefined) expect({ ran, status: outcome.status }).toEqual({ ran: true, status: 'ok' });
        else if (decision.effect === 'allow')
          expect({ ran, status: outcome.status, detail: outcome.error?.detail }).toEqual({
            ran: false,
            status: 'blocked',
            detail: `Blocked by policy: ${gate}`,
          });
        else if (decision.effect === 'deny')
          expect({ ran, status: outcome.status, detail: outcome.error?.detail }).toEqual({
            ran: false,
            status: 'blocked',
            detail: `Blocked by policy: ${decision.reason}`,
          });
        else expect({ ran, status: outcome.status }).toEqual({ ran: false, status: 'paused' });
      }),
      { numRuns: 10_000 },
    );
    await governance.close();
  }, 300_000);
});
