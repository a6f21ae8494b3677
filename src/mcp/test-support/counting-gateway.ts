// A real gateway over HTTP in front of counting-server.mjs under a policy, with a real SQLite store:
// the rig of the policy tests that go through the gateway with real SDK clients (policy-identity,
// hidden-tools). `ran(tool)` counts the tool's executions from the upstream side.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePolicy } from '../../governance/policy-load.js';
import { openStore } from '../../store/index.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { Gateway } from '../gateway/gateway.js';
import { GatewayGovernance } from '../gateway/governor.js';
import type { Authenticator } from '../serve/auth.js';
import type { UpstreamSpec } from '../upstream/upstream.js';
import { type HttpEndpoint, serveHttp } from '../serve/http.js';
import { repoRoot, silent, tempDir } from './harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

export interface CountingGateway {
  endpoint: HttpEndpoint;
  governance: GatewayGovernance;
  store: Store;
  /** How many times the upstream ran `tool`. */
  ran(tool: string): number;
  /** How many calls the governor was told of as calls to an unknown tool (what the metrics count). */
  unknownTools(): number;
  close(): Promise<void>;
}

/** Starts the gateway under `policyYaml`, served over HTTP with `auth` (none: loopback, unauthenticated), before `upstream` (default counting-server). */
export async function countingGateway(policyYaml: string, auth?: Authenticator, upstream?: UpstreamSpec): Promise<CountingGateway> {
  const dir = tempDir();
  const countFile = join(dir, 'count.jsonl');
  const store: Store = await openStore(join(dir, 'audit.db'));
  const governance = new GatewayGovernance({
    store,
    policy: parsePolicy(policyYaml, 'yaml'),
    approvalPollMs: 0,
    operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 5)),
  });
  let unknown = 0;
  const gw = await Gateway.start({
    upstreams: [upstream ?? { name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: countFile } }],
    governance,
    governor: { run: (_call, execute) => execute(), unknownTool: () => void unknown++ },
    log: silent,
  });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, ...(auth && { auth }) });
  return {
    endpoint,
    governance,
    store,
    unknownTools: () => unknown,
    ran: (tool) =>
      existsSync(countFile)
        ? readFileSync(countFile, 'utf8')
            .split('\n')
            .filter((l) => l.includes(`"tool":"${tool}"`)).length
        : 0,
    async close() {
      await endpoint.close();
      await gw.close();
      await store.close();
    },
  };
}
