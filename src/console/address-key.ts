/**
 * The key a client address is counted under by the sign-in limit. One host, or one customer of a
 * provider, is routinely given a whole IPv6 /64 and can pick any address in it: counting IPv6 per
 * address would let it rotate through 2^64 of them. So IPv6 addresses count per /64, and an
 * IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, as a dual-stack listener reports IPv4 peers) as its IPv4
 * address. Anything else (IPv4, or no address at all) is its own key.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** The limit's key of `address`: `a.b.c.d` for IPv4 (mapped or not), `h:h:h:h::/64` for IPv6. */
export function addressKey(address: string): string {
  const bare = address.replace(/%.*$/, '');
  if (!isIPv6(bare)) return address;
  const h = hextets(bare);
  if (h.slice(0, 5).every((x) => x === 0) && h[5] === 0xffff) return `${h[6]! >> 8}.${h[6]! & 255}.${h[7]! >> 8}.${h[7]! & 255}`;
  return `${h
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 part is its last two). */
function hextets(v6: string): number[] {
  let s = v6;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (dotted && isIPv4(dotted[0])) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, -dotted[0].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = s.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(zeros).fill('0'), ...right].map((x) => Number.parseInt(x, 16));
}
