/**
 * The client's address as the console sees it, through the reverse proxies it trusts
 * (`--trust-proxy CIDR[,CIDR...]`): behind nginx every peer is the proxy, and counting failed
 * sign-ins per peer would let 5 failures by anyone lock every user out.
 *
 * Only when the socket's peer is in a trusted range is `X-Forwarded-For` read at all (otherwise
 * anyone could name any address in it). Each trusted proxy appends the address it got the request
 * from, so the header is read from the right: the first entry that is not itself trusted is the
 * client; entries further left were written by the client and are ignored. A malformed entry
 * reached before it (a proxy that does not append, or is misconfigured) counts the request as the
 * peer's. Trusted ranges must therefore hold only proxies: a client inside one could name any
 * address as the one it came from.
 */
import { BlockList, isIP } from 'node:net';
import { ToolEnvelopeError } from 'tool-envelope/core';

/** The trusted proxies' ranges. */
export type TrustedProxies = BlockList;

/** Parses `CIDR[,CIDR...]` entries (`10.0.0.0/8`, `fd00::/8`, or one address) into trusted ranges; throws `invalid-option`. */
export function trustedProxies(ranges: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const range of ranges.flatMap((r) => r.split(',')).map((r) => r.trim())) {
    const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(range);
    const family = m ? isIP(m[1]!) : 0;
    const bits = family === 4 ? 32 : 128;
    const prefix = m?.[2] === undefined ? bits : Number(m[2]);
    if (!m || family === 0 || prefix > bits) {
      throw new ToolEnvelopeError('invalid-option', `a trusted proxy range must be an IPv4 or IPv6 address with an optional /prefix, got '${range}'`);
    }
    list.addSubnet(m[1]!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Whether `address` is in a trusted range (an IPv4-mapped IPv6 address matches its IPv4 ranges). */
function trusted(proxies: TrustedProxies, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && proxies.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The client's address of a request from `peer` (the socket's) carrying `forwardedFor` (its
 * `X-Forwarded-For`), given the trusted proxies (none: the peer, whatever the header says).
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | string[] | undefined, proxies?: TrustedProxies): string {
  if (peer === undefined) return 'unknown';
  if (!proxies || forwardedFor === undefined || !trusted(proxies, peer)) return peer;
  const entries = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  let client = peer;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!.trim();
    if (isIP(entry) === 0) return peer;
    client = entry;
    if (!trusted(proxies, entry)) return entry;
  }
  // Every hop is trusted: the client is the left-most, inside a proxy's range itself.
  return client;
}
