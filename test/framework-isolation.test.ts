/**
 * Importing `tool-envelope` or `tool-envelope/runtime` (and using them) loads none of the agent
 * frameworks: each lives behind its own subpath. A child process resolves the built package by name
 * with a module hook that records every module it loads; importing `tool-envelope/ai-sdk` is the
 * control that shows the hook sees a framework when one is loaded.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from './oracle.js';

const FRAMEWORKS = /\/node_modules\/(ai|@ai-sdk\/[^/]+|@openai\/[^/]+|openai|@langchain\/[^/]+|langchain|@langchain\/langgraph)\//;
const dir = mkdtempSync(path.join(tmpdir(), 'te-isolation-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The URLs of every module loaded while running `source` (an ES module) in a child node process. */
function loadedBy(source: string): string[] {
  const log = path.join(dir, `loaded-${Math.random().toString(36).slice(2)}.txt`);
  const hooks = path.join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { appendFileSync(process.env.TE_LOADED_LOG, url + '\\n'); return next(url, context); }`,
  );
  const register = path.join(dir, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hooks).href)});`);
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, '--input-type=module', '-e', source], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, TE_LOADED_LOG: log },
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
}

describe('the framework adapters stay behind their subpaths', () => {
  it('is built', () => {
    expect(existsSync(path.join(repoRoot, 'dist/src/frameworks/ai-sdk/index.js')), 'run `npm run build` first').toBe(true);
  });

  it('importing and using tool-envelope and tool-envelope/runtime loads no framework', () => {
    const loaded = loadedBy(`
      const core = await import('tool-envelope');
      const { createRuntime, defineTool, createGovernedRuntime } = await import('tool-envelope/runtime');
      const { createMemoryStore } = await import('tool-envelope/store');
      const t = defineTool({ name: 'n', description: 'd', approvalMode: 'read_only', handler: () => ({ ok: 1 }) });
      const runtime = createRuntime({ tools: [t] });
      const o = await createGovernedRuntime({ runtime, store: createMemoryStore() }).invoke('n', {});
      core.encodeDw(o); core.encodeContextosResult(o); core.checkMcec(core.encodeMcec(o));`);
    expect(loaded.some((u) => u.includes('/dist/src/runtime/'))).toBe(true);
    expect(loaded.filter((u) => FRAMEWORKS.test(u))).toEqual([]);
  });

  it.each([
    ['tool-envelope/ai-sdk', /\/node_modules\/ai\//],
    ['tool-envelope/openai-agents', /\/node_modules\/@openai\/agents/],
    ['tool-envelope/langchain', /\/node_modules\/@langchain\/core\//],
  ])('control: importing %s does load its framework', (subpath, framework) => {
    const loaded = loadedBy(`await import(${JSON.stringify(subpath)});`);
    expect(loaded.some((u) => framework.test(u))).toBe(true);
  });
});
