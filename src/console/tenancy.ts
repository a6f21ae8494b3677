/**
 * Which calls and approval requests an identity may see: an admin sees all; a viewer or approver
 * only those of its tenant. Anything else answers as not found, so another tenant's ids leak nothing.
 */
import type { AuditFilter } from '../store/types.js';
import type { Principal } from 'tool-envelope/core';
import { tenantOfChain } from '../store/tenant.js';
import type { ConsoleIdentity } from './identity.js';

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

/**
 * An audit filter narrowed to what `who` may see, so the store reads only that tenant's rows.
 *
 * @example
 * ```ts
 * store.listAudit(scopedFilter(who, { tool: 'a' }), { limit: 50 });
 * ```
 */
export function scopedFilter(who: ConsoleIdentity, filter: AuditFilter): AuditFilter {
  return who.role === 'admin' ? filter : { ...filter, tenant: who.tenant };
}
