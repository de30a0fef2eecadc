import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';

/**
 * Addresses an attachment fetch may not reach unless private networks are allowed: loopback,
 * RFC 1918, carrier-grade NAT, link-local (cloud metadata at 169.254.169.254), unique-local,
 * multicast, reserved and unspecified ranges, and their IPv4-mapped and NAT64 IPv6 forms. An image
 * URL comes from whoever sent the message, so without this a user could make the runner read
 * internal services and hand their answers to the model.
 */
const privateRanges = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) privateRanges.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32]] as const) {
  privateRanges.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (IPv4-mapped `::ffff:a.b.c.d` or NAT64 `64:ff9b::/96`), if any. */
function embeddedIPv4(address: string): string | null {
  const lower = address.toLowerCase();
  const tail = lower.startsWith('::ffff:') ? lower.slice(7) : lower.startsWith('64:ff9b::') ? lower.slice(9) : null;
  if (tail === null) return null;
  if (isIP(tail) === 4) return tail;
  const groups = tail.split(':');
  if (groups.length !== 2 || !groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  const [hi, lo] = groups.map((g) => parseInt(g, 16));
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether `address` (an IP literal) is outside the public internet. Anything that is not an IP counts as private. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return privateRanges.check(bare, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedIPv4(bare);
  return v4 !== null ? privateRanges.check(v4, 'ipv4') : privateRanges.check(bare, 'ipv6');
}

/** Error code of a connection refused because its host resolved to a private address. */
export const BLOCKED_ADDRESS_CODE = 'ERR_CONVEYOR_BLOCKED_ADDRESS';

export class BlockedAddressError extends Error {
  readonly code = BLOCKED_ADDRESS_CODE;
  constructor(host: string) {
    super(`${host} resolves to a private network address`);
    this.name = 'BlockedAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect` that fails when any address the name resolves to is private. The
 * connection then goes to the address checked here, so a name that resolves differently on a
 * second query (DNS rebinding) cannot slip past the check.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address))) return callback(new BlockedAddressError(hostname), []);
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}
