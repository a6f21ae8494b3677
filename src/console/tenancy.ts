/**
 * Which calls and approval requests an identity may see: an admin sees all; a viewer or approver
 * only those of its tenant. Anything else answers as not found, so another tenant's ids leak nothing.
 */
import type { AuditFilter } from '../store/types.js';
import type { Principal } from 'tool-envelope/core';
import { tenantOfChain } from '../store/tenant.js';
import type { ConsoleIdentity } from './identity.js';

/** True when `who` may see a call or request with this principal chain. */
export function visibleTo(who: ConsoleIdentity, chain: readonly Principal[]): boolean {
  return who.role === 'admin' || tenantOfChain(chain) === who.tenant;
}

/** An audit filter narrowed to what `who` may see, so the store reads only that tenant's rows. */
export function scopedFilter(who: ConsoleIdentity, filter: AuditFilter): AuditFilter {
  return who.role === 'admin' ? filter : { ...filter, tenant: who.tenant };
}
