/**
 * The console's OpenID Connect flags (`--oidc-issuer`, `--oidc-client-id`, `--public-url`), one set
 * for `tool-envelope console` and `gateway --console`: the same names, help, checks and options.
 */
import type { OidcOptions } from '../console/oidc.js';

/** The flags' parseArgs options. */
export const OIDC_FLAG_OPTIONS = {
  'oidc-issuer': { type: 'string' },
  'oidc-client-id': { type: 'string' },
  'public-url': { type: 'string' },
} as const;

/** The flags as given, checked. */
export interface OidcFlags {
  issuer: string;
  clientId: string;
  /** From `TOOL_ENVELOPE_OIDC_CLIENT_SECRET`; without it the client is public (PKCE only). */
  clientSecret?: string;
  /** `--public-url`, without a trailing slash. */
  publicUrl?: string;
}

const HELP: [flag: string, text: string][] = [
  [
    '--oidc-issuer URL',
    "also sign in with OpenID Connect (authorization code with PKCE) at this provider; roles from its 'roles' claim, tenant from 'tenant_id'",
  ],
  ['--oidc-client-id ID', "this console's client id at the provider (the secret, if any, in TOOL_ENVELOPE_OIDC_CLIENT_SECRET)"],
  [
    '--public-url URL',
    "the console's URL as browsers reach it (the callback registered with the provider is URL/console/oidc/callback); default: the address of LISTENER",
  ],
];

/**
 * The flags' lines of a verb's help: descriptions start at `column` (the verb's own) and wrap
 * before 100 characters; `listener` names the verb's listener, `prefix` starts each description.
 */
export function oidcFlagHelp(column: number, listener: string, prefix = ''): string {
  return HELP.map(([flag, text]) => flagHelpLines(flag, `${prefix}${text.replace('LISTENER', listener)}`, column)).join('');
}

/**
 * One flag's help lines: its description from `column`, wrapped before 100 characters; a flag too
 * long for the space before `column` gets its description on the lines below.
 */
export function flagHelpLines(flag: string, text: string, column: number): string {
  const width = 100 - column;
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 1 + word.length <= width) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  const pad = ' '.repeat(column);
  const head = flag.length <= column - 3 ? `  ${flag.padEnd(column - 3)} ` : `  ${flag}\n${pad}`;
  return `${head}${lines.join(`\n${pad}`)}\n`;
}

/** The flags of `values` (`undefined` when none is given), or a usage error. */
export function parseOidcFlags(values: Record<string, unknown>, env: NodeJS.ProcessEnv): OidcFlags | undefined | string {
  const issuer = values['oidc-issuer'];
  const clientId = values['oidc-client-id'];
  const publicUrl = values['public-url'];
  if ((typeof issuer === 'string') !== (typeof clientId === 'string')) return '--oidc-issuer and --oidc-client-id go together';
  if (typeof publicUrl === 'string' && !isHttpUrl(publicUrl)) return `--public-url must be an http(s) URL, got '${publicUrl}'`;
  if (typeof issuer !== 'string' || typeof clientId !== 'string') return undefined;
  if (!isHttpUrl(issuer)) return `--oidc-issuer must be an http(s) URL, got '${issuer}'`;
  const secret = env.TOOL_ENVELOPE_OIDC_CLIENT_SECRET;
  return {
    issuer,
    clientId,
    ...(secret && { clientSecret: secret }),
    ...(typeof publicUrl === 'string' && { publicUrl: publicUrl.replace(/\/+$/, '') }),
  };
}

/**
 * The console's OpenID Connect client of the flags. Its callback is under `--public-url`, else
 * under `listening()` (the listener's URL), read when the first sign-in starts: after the listener
 * has its port.
 */
export function oidcOptionsOf(flags: OidcFlags, listening: () => string): OidcOptions {
  const { publicUrl, ...client } = flags;
  return {
    ...client,
    get redirectUri() {
      return `${(publicUrl ?? listening()).replace(/\/+$/, '')}/console/oidc/callback`;
    },
  };
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
