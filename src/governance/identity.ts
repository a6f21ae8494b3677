/**
 * Identity: who a call acts for comes from authentication (a bearer token, an OAuth access token)
 * or from the operator (the gateway's `--principal`, default the OS user), never from the request.
 * What a caller declares (a `_meta` principal chain) may only extend that verified chain with the
 * agents acting under it.
 */
import { userInfo } from 'node:os';
import type { JsonObject, Principal } from 'tool-envelope/core';

/** A verified identity: the principal a credential (or the operator) vouches for, its tenant and roles. */
export interface Identity {
  principal: Principal;
  /** Roles the credential grants (`approver`, ...). */
  roles: readonly string[];
  /** How it was established: `token` (bearer tokens file), `oauth` (a JWT), `operator` (configuration, the OS user). */
  via: 'token' | 'oauth' | 'operator';
  /** The principals the operator configured after the head (stdio `--principal` repeated). */
  chain?: readonly Principal[];
  /** What the credential says beyond roles (a JWT's claims, a tokens file entry's `claims`), for policy conditions. */
  claims?: JsonObject;
}

/** The identity of the operator running this process: `user:<OS user name>`. */
export function osIdentity(): Identity {
  let name = 'unknown';
  try {
    name = userInfo().username || name;
  } catch {
    // No passwd entry for this uid (some containers): the uid itself names the user.
    name = `uid-${process.getuid?.() ?? 'unknown'}`;
  }
  return { principal: { kind: 'user', id: name }, roles: [], via: 'operator' };
}

/** The verified chain of an identity (its principal, then any operator-configured entries). */
export function verifiedChain(identity: Identity): Principal[] {
  return [{ ...identity.principal }, ...(identity.chain ?? []).map((p) => ({ ...p }))];
}

const same = (a: Principal, b: Principal): boolean => a.kind === b.kind && a.id === b.id;

/**
 * The principal chain of a call: the verified chain, extended by the agents the caller declares.
 * A declared chain that restates the verified entries first has them dropped; what remains must be
 * agents or automations (acting under the verified principal), which take the verified tenant.
 * Returns the chain and how many leading entries are verified, or an error message.
 */
export function composeChain(verified: readonly Principal[], declared: readonly Principal[] | undefined): { chain: Principal[]; verified: number } | string {
  const chain = verified.map((p) => ({ ...p }));
  if (!declared || declared.length === 0) return { chain, verified: chain.length };
  let i = 0;
  while (i < declared.length && i < verified.length && same(declared[i]!, verified[i]!)) i++;
  const tenant = verified[0]?.tenant_id;
  for (let j = i; j < declared.length; j++) {
    const p = declared[j]!;
    if (p.kind !== 'agent' && p.kind !== 'automation') {
      return `principal ${j}: a declared principal may only be an agent or automation acting under the authenticated ${verified[0] ? `${verified[0].kind}:${verified[0].id}` : 'caller'}; ${p.kind}:${p.id} cannot be declared`;
    }
    const { tenant_id: _t, ...rest } = p;
    chain.push({ ...rest, ...(tenant !== undefined && { tenant_id: tenant }) });
  }
  return { chain, verified: verified.length };
}
