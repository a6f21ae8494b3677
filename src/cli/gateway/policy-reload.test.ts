// `tool-envelope gateway --policy FILE` reloads its policy without a restart (#38 point 7): the verb run
// from the sources in front of counting-server.mjs, a real SDK client over HTTP, a real SQLite store,
// JSON log lines parsed. A change of the file puts the new policy in force; SIGHUP with a bad file is
// refused and logged with its errors, the policy in force stays; `audit show` names each record's
// deciding rule and policy digest.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { parsePolicy } from '../../governance/policy-load.js';
import { httpClient, repoRoot, tempDir } from '../../mcp/test-support/harness.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import * as audit from '../audit.js';
import { eventually, startGateway, type ObservedGateway } from '../test-support/observed-gateway.js';
import { runVerb } from '../test-support/run-verb.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const OPEN = 'version: 1\nrules:\n  - { name: notes-open, match: { tool: write_note }, effect: allow }\n';
const SHUT = 'version: 1\nrules:\n  - { name: notes-shut, match: { tool: write_note }, effect: deny, reason: notes are shut }\n';
const HIDDEN = 'version: 1\nrules:\n  - { name: notes-hidden, match: { tool: write_note }, effect: deny, hide: true }\n';
const BAD = 'version: 1\nrules:\n  - { name: broken, match: { tool: write_note }, effect: allow, when: "nosuch(args)" }\n';

let g: ObservedGateway | undefined;
afterAll(async () => {
  await g?.stop();
});

function logLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('gateway --policy FILE reloads', () => {
  it('on a change of the file and on SIGHUP; a bad policy is refused and logged, the old one stays; audit show names rule and digest', async () => {
    const dir = tempDir();
    const file = join(dir, 'policy.yaml');
    const db = join(dir, 'audit.db');
    writeFileSync(file, OPEN);
    g = await startGateway(['--http', '0', '--store', db, '--policy', file, '--log-format', 'json', '--', process.execPath, COUNTING]);
    const { client } = await httpClient(g.url);
    const write = async (text: string): Promise<{ ok: boolean; error?: { detail?: string } }> =>
      (await client.callTool({ name: 'write_note', arguments: { text } })).structuredContent as { ok: boolean };
    expect((await write('one')).ok).toBe(true);

    writeFileSync(file, SHUT);
    const shut = parsePolicy(SHUT, 'yaml').digest;
    const reloaded = await eventually(async () => logLines(g!.stderr()).find((l) => l.msg === 'policy reloaded'), 'the reload log line');
    expect(reloaded).toMatchObject({ level: 'info', component: 'policy', file, digest: shut, previous: parsePolicy(OPEN, 'yaml').digest });
    expect(await write('two')).toMatchObject({ ok: false, error: { detail: 'Blocked by policy: notes are shut' } });

    writeFileSync(file, BAD);
    process.emit('SIGHUP');
    const refused = await eventually(
      async () => logLines(g!.stderr()).find((l) => l.msg === 'policy reload refused; the policy in force stays'),
      'the refusal',
    );
    expect(refused).toMatchObject({ level: 'error', component: 'policy', file, digest: shut, code: 'invalid-option' });
    expect(String(refused.error)).toMatch(/\/rules\/0\/when .*nosuch/);
    expect(await write('three')).toMatchObject({ ok: false, error: { detail: 'Blocked by policy: notes are shut' } });
    await client.close();

    const store = await openSqliteStore({ path: db });
    const { records } = await store.listAudit({ tool: 'write_note' }, { limit: 10 });
    await store.close();
    const byText = new Map(records.map((r) => [(r.callEnvelope as { args: { text: string } }).args.text, r.id]));
    const shown = await runVerb(audit, ['show', byText.get('three')!, '--store', db]);
    expect(shown.stdout).toMatch(/policy rule +notes-shut\n/);
    expect(shown.stdout).toContain(`sha256:${shut}`);
    const first = await runVerb(audit, ['show', byText.get('one')!, '--store', db]);
    expect(first.stdout).toMatch(/policy rule +notes-open\n/);
    expect(first.stdout).toContain(`sha256:${parsePolicy(OPEN, 'yaml').digest}`);
  });

  it('tells every session to list its tools again: a reloaded policy that hides a tool takes it out of the list', async () => {
    const dir = tempDir();
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, OPEN);
    const served = await startGateway(['--http', '0', '--no-store', '--policy', file, '--', process.execPath, COUNTING]);
    try {
      const { client } = await httpClient(served.url);
      let changed = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void changed++);
      const names = async () => (await client.listTools()).tools.map((t) => t.name);
      expect(await names()).toContain('write_note');
      writeFileSync(file, HIDDEN);
      await eventually(async () => (changed > 0 ? true : undefined), 'notifications/tools/list_changed');
      expect(await names()).not.toContain('write_note');
      expect(await names()).toContain('read_notes');
      await client.close();
    } finally {
      await served.stop();
    }
  });
});
