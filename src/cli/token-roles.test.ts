// A tokens file's roles at load: a near miss of a console role is warned of (the console verb, in
// the test's process, over a real SQLite file); other roles, which policies may test, pass silently.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokenDigest } from '../mcp/serve/auth.js';
import { openStore } from '../store/index.js';
import { run as approvals } from './audit-approvals.js';
import { run } from './console.js';
import { memoryIo } from './test-support/memory-io.js';
import { tokenRoleWarnings } from './token-roles.js';

describe('tokens file roles', () => {
  it('a near miss of a console role is warned of with the nearest one; console and policy roles are not', () => {
    expect(tokenRoleWarnings(['aprover', 'viewer', 'research', 'admins'], 't.yaml')).toEqual([
      "t.yaml: role 'aprover' is not a console role (viewer, approver, admin): did you mean 'approver'? (kept as written: policy conditions may test any role)",
      "t.yaml: role 'admins' is not a console role (viewer, approver, admin): did you mean 'admin'? (kept as written: policy conditions may test any role)",
    ]);
  });

  it('the console verb warns at start and serves', async () => {
    const io = memoryIo();
    await (await openStore(join(io.cwd, 'audit.db'))).close();
    writeFileSync(join(io.cwd, 'tokens.yaml'), `tokens:\n  - { sha256: ${tokenDigest('t1')}, principal: "user:al", roles: [aprover] }\n`);
    const running = run(['--store', join(io.cwd, 'audit.db'), '--listen', '127.0.0.1:0', '--tokens', 'tokens.yaml'], io);
    const deadline = Date.now() + 10_000;
    while (!io.out().includes('Console: ')) {
      if (Date.now() > deadline) throw new Error(`console did not start: ${io.err()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    io.abort();
    expect(await running).toBe(0);
    expect(io.err()).toBe(
      "tool-envelope console: WARNING: tokens.yaml: role 'aprover' is not a console role (viewer, approver, admin): did you mean 'approver'? (kept as written: policy conditions may test any role)\n",
    );
  });

  // The console and `approve --tokens` load the same file as the gateway: a misspelt key is refused
  // with the nearest known one there too.
  it('a misspelt key is refused with a did-you-mean by the console and by approve --tokens', async () => {
    const io = memoryIo();
    await (await openStore(join(io.cwd, 'audit.db'))).close();
    writeFileSync(join(io.cwd, 'tokens.yaml'), `tokens:\n  - { sha256: ${tokenDigest('t1')}, principal: "user:al", role: [approver] }\n`);
    expect(await run(['--store', join(io.cwd, 'audit.db'), '--listen', '127.0.0.1:0', '--tokens', 'tokens.yaml'], io)).toBe(2);
    const near = "tokens.yaml: tokens[0].role: unknown key (expected one of sha256, principal, tenant, roles, claims) (did you mean 'roles'?)";
    expect(io.err()).toContain(`tool-envelope console: ${join(io.cwd, near)}`);
    const io2 = memoryIo({ TOOL_ENVELOPE_TOKEN: 't1' }, io.cwd);
    expect(await approvals(['approve', 'apr_1', '--store', join(io.cwd, 'audit.db'), '--tokens', 'tokens.yaml'], io2)).toBe(2);
    expect(io2.err()).toContain(near);
  });
});
