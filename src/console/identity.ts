/**
 * Who is signed in to the console: a verified identity (a token of the gateway's tokens file, an
 * OAuth/OIDC identity, or the operator) reduced to one console role and one tenant.
 */
import type { Principal } from 'tool-envelope/core';
import type { Identity } from '../governance/identity.js';

/** The console's roles, weakest first: a viewer reads, an approver also decides, an admin sees every tenant. */
export const CONSOLE_ROLES = ['viewer', 'approver', 'admin'] as const;
/** One console role. */
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

/** A signed-in identity. */
export interface ConsoleIdentity {
  principal: Principal;
  role: ConsoleRole;
  /** The tenant whose calls a viewer or approver sees; `null`: calls without a tenant. */
  tenant: string | null;
}

/**
 * The console identity of a verified identity: its strongest console role, or `undefined` when it
 * has none (such a credential cannot sign in).
 */
export function consoleIdentityOf(identity: Identity): ConsoleIdentity | undefined {
  const role = [...CONSOLE_ROLES].reverse().find((r) => identity.roles.includes(r));
  if (!role) return undefined;
  return { principal: { ...identity.principal }, role, tenant: identity.principal.tenant_id ?? null };
}

/** `kind:id`, the name a decision is signed with. */
export function principalName(p: Principal): string {
  return `${p.kind}:${p.id}`;
}
