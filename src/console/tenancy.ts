/**
 * Which calls and approval requests an identity may see: an admin sees all; a viewer or approver
 * only those of its tenant. Anything else answers as not found, so another tenant's ids leak nothing.
 */
import type { Principal } from 'tool-envelope/core';
import type { ConsoleIdentity } from './identity.js';

/** The tenant of a call: that of the first principal of its chain that names one; `null` for none. */
export function tenantOfChain(chain: readonly Principal[]): string | null {
  for (const p of chain) if (typeof p.tenant_id === 'string' && p.tenant_id !== '') return p.tenant_id;
  return null;
}

/**
 * True when `who` may see a call or request with this principal chain.
 *
 * @example
 * ```ts
 * visibleTo({ principal: { kind: 'user', id: 'a' }, role: 'viewer', tenant: 'acme' }, [{ kind: 'user', id: 'x', tenant_id: 'acme' }]); // true
 * ```
 */
export function visibleTo(who: ConsoleIdentity, chain: readonly Principal[]): boolean {
  return who.role === 'admin' || tenantOfChain(chain) === who.tenant;
}
