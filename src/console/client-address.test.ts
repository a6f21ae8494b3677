// Who a sign-in is counted as: the client's address through trusted proxies only, and the key it is
// counted under (IPv6 per /64, IPv4-mapped IPv6 as IPv4), checked against node:net's own BlockList.
import { randomBytes } from 'node:crypto';
import { BlockList } from 'node:net';
import { describe, expect, it } from 'vitest';
import { addressKey } from './address-key.js';
import { clientAddress, trustedProxies } from './client-address.js';

describe('addressKey', () => {
  it('counts IPv6 per /64, whatever the spelling', () => {
    const key = addressKey('2001:db8:1:2::1');
    expect(key).toBe('2001:db8:1:2::/64');
    for (const a of ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::', '2001:db8:1:2:0:0:1.2.3.4'])
      expect(addressKey(a)).toBe(key);
    expect(addressKey('2001:db8:1:3::1')).not.toBe(key);
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('::')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    // NAT64 is not IPv4-mapped: a /64 like any other.
    expect(addressKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address, and IPv4 (or no address) as itself', () => {
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::FFFF:cb00:7107')).toBe('203.0.113.7');
    expect(addressKey('0:0:0:0:0:ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('unknown')).toBe('unknown');
  });

  it('agrees with node:net: 500 random addresses, full and compressed, each inside its key /64 and outside the next one', () => {
    for (let i = 0; i < 500; i++) {
      const bytes = randomBytes(16);
      const groups = Array.from({ length: 8 }, (_, j) => bytes.readUInt16BE(j * 2));
      // Runs of zero groups, so that '::' appears in the compressed form at any place.
      if (i % 3 === 0) groups.fill(0, i % 8, (i % 8) + 1 + (i % 4));
      const full = groups.map((x) => x.toString(16).padStart(4, '0')).join(':');
      const compressed = new URL(`http://[${full}]/`).hostname.slice(1, -1);
      const key = addressKey(full);
      expect(addressKey(compressed)).toBe(key);
      if (key.includes('.')) continue;
      const prefix = key.slice(0, -'/64'.length);
      const inside = new BlockList();
      inside.addSubnet(prefix, 64, 'ipv6');
      expect(inside.check(compressed, 'ipv6')).toBe(true);
      const next = [...groups];
      next[3] = (next[3]! + 1) & 0xffff;
      expect(inside.check(next.map((x) => x.toString(16)).join(':'), 'ipv6')).toBe(false);
    }
  });
});

describe('clientAddress', () => {
  const nginx = trustedProxies(['10.0.0.5/32']);

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy (a client cannot name its own address)', () => {
    expect(clientAddress('198.51.100.9', '203.0.113.7', nginx)).toBe('198.51.100.9');
    expect(clientAddress('198.51.100.9', '10.0.0.5', nginx)).toBe('198.51.100.9');
    // Without trusted proxies, never read.
    expect(clientAddress('10.0.0.5', '203.0.113.7')).toBe('10.0.0.5');
    expect(clientAddress(undefined, '203.0.113.7', nginx)).toBe('unknown');
  });

  it('through a trusted proxy: the right-most entry that is not itself trusted; entries the client wrote further left are ignored', () => {
    expect(clientAddress('10.0.0.5', '198.51.100.9', nginx)).toBe('198.51.100.9');
    // The client sent "X-Forwarded-For: 203.0.113.7"; nginx appended the address it came from.
    expect(clientAddress('10.0.0.5', '203.0.113.7, 198.51.100.9', nginx)).toBe('198.51.100.9');
    expect(clientAddress('10.0.0.5', ['203.0.113.7', '198.51.100.9'], nginx)).toBe('198.51.100.9');
    // No header from a trusted proxy: the proxy itself.
    expect(clientAddress('10.0.0.5', undefined, nginx)).toBe('10.0.0.5');
    expect(clientAddress('::ffff:10.0.0.5', '2001:db8::7', nginx)).toBe('2001:db8::7');
  });

  it('through a chain of trusted proxies (a load balancer in front of nginx)', () => {
    const chain = trustedProxies(['10.0.0.0/24', 'fd00::/8']);
    expect(clientAddress('10.0.0.5', '203.0.113.7, 198.51.100.9, fd00::1', chain)).toBe('198.51.100.9');
    expect(clientAddress('10.0.0.5', '198.51.100.9,10.0.0.7', chain)).toBe('198.51.100.9');
    // Every hop trusted: the left-most, a client inside a proxy range itself.
    expect(clientAddress('10.0.0.5', '10.0.0.8, 10.0.0.7', chain)).toBe('10.0.0.8');
  });

  it('a malformed entry reached before the client counts the request as the peer; garbage the client wrote further left does not matter', () => {
    for (const header of ['garbage', '', ' , ', '198.51.100.9, not-an-ip', '198.51.100.9:443', '[2001:db8::1]', '10.0.0.7, 999.1.1.1'])
      expect(clientAddress('10.0.0.5', header, trustedProxies(['10.0.0.0/24']))).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.5', 'garbage, <script>, 198.51.100.9', nginx)).toBe('198.51.100.9');
  });

  it('trusted ranges: addresses and CIDRs of both families, comma-separated or not; anything else refused', () => {
    const t = trustedProxies(['127.0.0.1, 10.0.0.0/8', '::1', 'fd00::/8']);
    for (const peer of ['127.0.0.1', '10.9.9.9', '::1', 'fd12::3', '::ffff:10.1.2.3']) expect(clientAddress(peer, '198.51.100.9', t)).toBe('198.51.100.9');
    expect(clientAddress('127.0.0.2', '198.51.100.9', t)).toBe('127.0.0.2');
    for (const bad of ['10.0.0.0/33', '::/129', 'nginx', '10.0.0.0/', '', '10.0.0.0/8/8'])
      expect(() => trustedProxies([bad])).toThrow(expect.objectContaining({ code: 'invalid-option' }));
  });
});
