/**
 * The policy file an operator writes for #38's cases, with `when` conditions and no TypeScript:
 * writes only under /srv/shared, fetch only to our domain except for the `research` role,
 * approval above an amount. Shared by the tests that enforce it (governed runtime) and that check
 * and explain it (the `policy` CLI verb). Test support only (excluded from the build).
 */
export const OPERATOR_POLICY = `# what an operator writes: no TypeScript
version: 1
default: deny
rules:
  - name: outside-shared
    match: { tool: write_file }
    when: "!within(args.path, '/srv/shared')"
    effect: deny
    reason: writes stay under /srv/shared
  - name: shared-writes
    match: { tool: write_file }
    effect: allow
  - name: research-fetch
    match: { tool: fetch }
    when: "'research' in identity.roles"
    effect: allow
  - name: our-hosts
    match: { tool: fetch }
    when: >-
      host(args.url) == 'example.com' || host(args.url).endsWith('.example.com')
    effect: allow
  - name: other-hosts
    match: { tool: fetch }
    effect: deny
  - name: large-transfer
    match: { tool: transfer }
    when: "toNumber(args.amount) > 1000"
    effect: require-approval
  - name: transfers
    match: { tool: transfer }
    effect: allow
  - name: read-only-tools
    match: { tool: "notes.*" }
    when: "tool.annotations.readOnlyHint == true"
    effect: allow
`;
