// Regenerates test/fixtures/plain-failure-corpus.json: starts each reference MCP server of
// test/plain-failures/cases.mjs once (the real packages, dev dependencies), makes every call of the
// corpus with the SDK's own client, and records the command, the call and exactly what came back
// (the result's text, isError and structuredContent, or the JSON-RPC error). Run:
//   node scripts/plain-failure-corpus.mjs
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CASES, displayCommand, prepareWorkspace, repoRoot, serverSpecs } from '../test/plain-failures/cases.mjs';

const ws = prepareWorkspace();
const specs = serverSpecs(ws);
const clients = {};
for (const [name, spec] of Object.entries(specs)) {
  const client = new Client({ name: 'corpus', version: '1' });
  await client.connect(
    new StdioClientTransport({ command: spec.command, args: spec.args, env: { ...process.env, ...spec.env }, stderr: 'ignore', cwd: ws.root }),
  );
  clients[name] = client;
}
const scrub = (s) => s.split(ws.root).join('$WS');
const records = [];
for (const kase of CASES) {
  const args = typeof kase.args === 'function' ? kase.args(ws) : kase.args;
  const record = {
    server: kase.server,
    command: displayCommand(specs[kase.server], ws),
    call: { name: kase.tool, arguments: JSON.parse(scrub(JSON.stringify(args))) },
    label: kase.label,
  };
  if (kase.note) record.note = kase.note;
  try {
    const r = await clients[kase.server].callTool({ name: kase.tool, arguments: args });
    const text = (r.content ?? [])
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('\n');
    record.answer = { isError: r.isError === true, text: scrub(text) };
    if (r.structuredContent !== undefined) record.answer.structuredContent = JSON.parse(scrub(JSON.stringify(r.structuredContent)));
  } catch (err) {
    record.answer = { rpcError: { code: err.code, message: scrub(String(err.message)) } };
  }
  records.push(record);
}
for (const client of Object.values(clients)) await client.close();
const out = join(repoRoot, 'test', 'fixtures', 'plain-failure-corpus.json');
writeFileSync(out, JSON.stringify({ generatedBy: 'node scripts/plain-failure-corpus.mjs', cases: records }, null, 2) + '\n');
const bad = records.filter((r) => !r.answer.isError && !r.answer.rpcError);
console.log(
  `${records.length} cases from ${Object.keys(specs).length} servers -> ${out}` +
    (bad.length ? `; ${bad.length} did not fail: ${bad.map((r) => r.server + '/' + r.call.name).join(', ')}` : ''),
);
