/**
 * A real gateway process with its console (`gateway --http 0 --console --auth tokens FILE`) in
 * front of counting-server.mjs, a real SDK client of it, and Chromium (Debian's, through
 * playwright-core) signed in to its console. Test support for the console's browser tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type Browser, chromium, type Page } from 'playwright-core';
import { locate, missingMessage, prereq } from '../../../scripts/test-prereqs.mjs';
import { tokenDigest } from '../../mcp/serve/auth.js';
import { repoRoot } from '../../mcp/test-support/harness.js';

/** The tokens file's entries by token. */
export type TokenTable = Record<string, { principal: string; tenant?: string; roles: string[] }>;

/** Writes a tokens file (`--auth tokens FILE`) of the table. */
export function writeTokensFile(file: string, tokens: TokenTable): void {
  writeFileSync(
    file,
    `tokens:\n${Object.entries(tokens)
      .map(
        ([t, v]) => `  - { sha256: ${tokenDigest(t)}, principal: "${v.principal}"${v.tenant ? `, tenant: ${v.tenant}` : ''}, roles: [${v.roles.join(', ')}] }`,
      )
      .join('\n')}\n`,
  );
}

/** A running gateway with its console. */
export interface ConsoleGateway {
  process: ChildProcess;
  mcpUrl: string;
  /** Ends with `/console/`. */
  consoleUrl: string;
  stop(): Promise<void>;
}

/** Starts `gateway --http 0 --console` over `store` (a SQLite path or a postgres:// URL), with `args` added to its flags. */
export async function startConsoleGateway(options: {
  store: string;
  tokensFile: string;
  home: string;
  env?: Record<string, string>;
  args?: string[];
}): Promise<ConsoleGateway> {
  const gateway = spawn(
    process.execPath,
    [
      // The built CLI, as a user runs it (`npm test` builds first).
      join(repoRoot, 'dist/src/cli/main.js'),
      'gateway',
      '--http',
      '0',
      '--console',
      '--auth',
      'tokens',
      options.tokensFile,
      '--store',
      options.store,
      '--approval-poll',
      '100',
      ...(options.args ?? []),
      '--',
      process.execPath,
      join(repoRoot, 'src/mcp/test-support/counting-server.mjs'),
    ],
    { cwd: repoRoot, env: { ...process.env, TOOL_ENVELOPE_KEY: 'ef'.repeat(32), HOME: options.home, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  gateway.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const urls = await new Promise<{ mcpUrl: string; consoleUrl: string }>((resolve, reject) => {
    gateway.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /MCP endpoint \(Streamable HTTP\): (\S+)[\s\S]*Console: (\S+)/.exec(out);
      if (m) resolve({ mcpUrl: m[1]!, consoleUrl: m[2]! });
    });
    gateway.once('exit', (code) => reject(new Error(`the gateway exited (${code}): ${err}`)));
  });
  return {
    process: gateway,
    ...urls,
    async stop() {
      if (gateway.exitCode !== null) return;
      const exited = new Promise((r) => gateway.once('exit', r));
      gateway.kill('SIGTERM');
      await exited;
    },
  };
}

/** A real SDK client of the gateway, authenticated with `token`. */
export async function agentOf(mcpUrl: string, token: string): Promise<Client> {
  const client = new Client({ name: 'console-browser-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** Debian's Chromium, or a failure naming what to install. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = locate(prereq('chromium'));
  if (!executablePath) throw new Error(missingMessage(prereq('chromium')));
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** A new browser context signed in to the console with `token`, on the inbox. */
export async function signedInPage(browser: Browser, consoleUrl: string, token: string, width = 1400): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${consoleUrl}sign-in`);
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(/\/console\/inbox/), page.click('button[type=submit]')]);
  return page;
}
