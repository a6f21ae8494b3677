/**
 * `tool-envelope gateway`: serves MCP in front of upstream MCP servers and wraps every tool result
 * in the chosen contract, recording each call in the store. The verb is three steps, each a file of
 * gateway/: parse (the command line, checked), configure (the parts built), serve (until signalled).
 */
import { UPSTREAM_FLAG_HELP } from './gateway/upstream-flags.js';
import { CONSOLE_FLAG_HELP } from './console-mount.js';
import { OBSERVE_FLAG_HELP } from './gateway/observe.js';
import { NOTIFY_FLAG_HELP } from './gateway/approvals.js';
import { configureGateway } from './gateway/configure.js';
import { parseGatewayArgs } from './gateway/parse.js';
import { serveGateway } from './gateway/serve.js';
import { usageError } from './args.js';
import { EXIT, type CliIo } from './io.js';

/** `--help` text. */
export const help = `Usage: tool-envelope gateway [options] -- UPSTREAM_COMMAND [ARGS...]
       tool-envelope gateway [options] --url http://HOST:PORT/mcp
       tool-envelope gateway [options] --config gateway.yaml

Serves MCP in front of one or more upstream MCP servers. Every request and
notification is forwarded; every tool result keeps the upstream's content
blocks and gains an envelope of the chosen contract as structuredContent.
Each call is recorded in the store's audit log.

Options:
  --dialect DIALECT             contract of the envelopes: mcec (default), dw, contextos,
                                or a later revision: mcec@2026-07, dw@14
  --http PORT                   serve Streamable HTTP on 127.0.0.1:PORT/mcp (0 = a free port);
                                without it the gateway serves stdio
  --host ADDR                   interface for --http (default 127.0.0.1); a non-loopback address
                                needs --auth (or --insecure-no-auth)
  --auth tokens FILE            HTTP: bearer tokens from FILE (JSON/YAML: tokens: [{ sha256,
                                principal: KIND:ID, tenant?, roles?, claims? }], at most 4 MiB);
                                each session acts for its token's principal
  --auth oauth                  HTTP: OAuth 2.1 resource server: JWT access tokens of
                                --oauth-issuer, audience --resource (default: the endpoint URL)
  --oauth-issuer URL            the authorization server (iss)
  --oauth-jwks URL              its JWKS (default: jwks_uri of the issuer's metadata)
  --resource URL                this gateway's public URL (OAuth audience and metadata)
  --allow-origin ORIGIN         a browser Origin allowed to call (repeatable; default: loopback
                                origins only; requests without Origin are always allowed)
  --max-sessions N              most open HTTP sessions (default 1000)
  --session-idle MS             close HTTP sessions idle this long (default 1800000, 0 = never)
  --insecure-no-auth            allow a non-loopback --host without --auth (the MCP endpoint
                                only: --console there still needs --auth or --oidc-issuer)
  --replica-id NAME             HTTP: this process is replica NAME of several behind a reverse
                                proxy: session ids start with 'NAME.', for sticky routing
                                (see docs/deploy.md)
  --store PATH|URL              SQLite file (or sqlite:PATH), postgres:// URL, or memory (this
                                process only) (default: $TOOL_ENVELOPE_STORE, else ./tool-envelope.db)
  --no-store                    record nothing (approvals are then held in this process: only
                                --console releases them)
  --audit-commit before-answer|background
                                before-answer (default): a call answers once its audit record is
                                committed; background: answers sooner, but a crash loses the last records
  --redact TOOL=POINTER         also redact this value in the audit log (repeatable; POINTER under
                                /args or /result, e.g. crm_update=/args/customer/ssn; adds to the
                                config file's redact). Secret-looking keys and secret formats are always redacted
  --no-redact                   store arguments and results verbatim (each record says so)
  --url URL                     a Streamable HTTP upstream instead of a command
  --config FILE                 upstreams and settings from a JSON/YAML file (see docs/mcp.md)
  --prefix PREFIX               prefix of the upstream's tool and prompt names
  --deadline MS                 deadline of each tool call (default 30000)
  --preview-limit BYTES         preview byte limit (default 4096)
  --mode TOOL=MODE              approval mode of a tool (repeatable): read_only, local_write,
                                network, delegated, destructive (default: from annotations)
  --health-interval MS          upstream health-ping interval, 0 = off (default 10000)
  --policy FILE                 approval policy rules (JSON/YAML, see docs/governance.md);
                                default: the ContextOS per-mode defaults (destructive calls
                                pause for an approver, delegated calls need a user and evidence);
                                reloaded on SIGHUP and when the file changes (a bad one is
                                refused and logged; the policy in force stays)
  --require-idempotency-key MODE
                                calls at MODE or above need _meta["tool-envelope/idempotency-key"]
                                (default: off)
  --principal KIND:ID           the verified principal of unauthenticated sessions (stdio,
                                loopback HTTP): repeatable, originating principal first; default
                                user:<the OS user>. A client's _meta chain only adds agents after it
  --approval-ttl MS             how long an approval request stays open (default 86400000)
  --approval-poll MS            how often approved requests are picked up, 0 = never (default 500)
${NOTIFY_FLAG_HELP}${UPSTREAM_FLAG_HELP}${OBSERVE_FLAG_HELP}${CONSOLE_FLAG_HELP}  --quiet                       no diagnostics on stderr (--log-level silent)

Paused calls: approve with 'tool-envelope audit approvals approve ID --store ...' (as the OS user),
or in the console (--console); this gateway then runs the call once and records its final envelope.
With --no-store or --store memory only the console can.

Examples:
  tool-envelope gateway -- npx -y @modelcontextprotocol/server-everything
  tool-envelope gateway --dialect dw --http 3333 -- node my-server.js
  tool-envelope gateway --http 3333 --console --oidc-issuer https://id.example.com --oidc-client-id te -- node my-server.js
  tool-envelope gateway --http 3333 --console --trust-proxy 127.0.0.1/32 -- node my-server.js
  tool-envelope gateway --config gateway.yaml --store postgres://app@localhost/agents

Exit codes: 0 stopped normally (client gone, SIGINT/SIGTERM), 2 usage error, an
            upstream that cannot start, a store that cannot open or a busy port.
`;

/** The process ends as soon as the verb returns: a handle left behind must not keep a stopped gateway alive. */
export const exitWhenDone = true;

/** Runs the gateway until the client disconnects (stdio) or the process is signalled. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const settings = await parseGatewayArgs(args, io, help);
  if (typeof settings === 'string') return usageError('gateway', io, settings);
  const parts = await configureGateway(settings, io);
  if (!('gateway' in parts)) return parts.fatal ? EXIT.USAGE : usageError('gateway', io, parts.message);
  return serveGateway(settings, parts, io);
}
