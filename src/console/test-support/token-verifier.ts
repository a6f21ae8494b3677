/**
 * A console's `verifyToken` as `--auth tokens` checks a bearer token: each entry is a token file's
 * entry with the token itself in place of its digest. Test support only.
 */
import { isAuthFailure, tokenAuthenticator, tokenDigest } from '../../mcp/serve/auth.js';
import type { ConsoleOptions } from '../console.js';

/** A token and the identity it stands for. */
export interface TestToken {
  token: string;
  principal: string;
  tenant?: string;
  roles?: string[];
}

/** The identity of a known token, undefined for any other. */
export function tokenVerifier(tokens: TestToken[]): ConsoleOptions['verifyToken'] {
  const auth = tokenAuthenticator({ tokens: tokens.map(({ token, ...who }) => ({ sha256: tokenDigest(token), ...who })) });
  return async (t) => {
    const who = await auth.authenticate(`Bearer ${t}`);
    return isAuthFailure(who) ? undefined : who;
  };
}
