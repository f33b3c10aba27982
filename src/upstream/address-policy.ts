/**
 * Which addresses toolsift may connect to on a tenant's behalf (the SSRF defence). A tenant
 * registers an upstream by URL; without a policy that URL reaches loopback services, the cloud
 * metadata endpoint (169.254.169.254, fd00:ec2::254) and the private network from inside.
 *
 * Pure: no DNS, no sockets. The guarded fetch (guarded-fetch.ts) resolves each host once and asks
 * here about every address before it connects, so the answer holds however the URL spelled it.
 */

/** Why an address is refused: a short class that is safe to show the tenant. */
export type RefusalReason = 'unspecified' | 'loopback' | 'private' | 'link-local' | 'cgnat' | 'multicast' | 'broadcast' | 'reserved' | 'not-an-ip';

export const REFUSAL_REASONS: ReadonlySet<string> = new Set<RefusalReason>([
  'unspecified',
  'loopback',
  'private',
  'link-local',
  'cgnat',
  'multicast',
  'broadcast',
  'reserved',
  'not-an-ip',
]);

export interface IpAddress {
  version: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

export interface IpNetwork extends IpAddress {
  prefix: number;
}

/** UPSTREAM_ALLOW, parsed: what may be reached besides public addresses. */
export interface AllowList {
  readonly networks: readonly IpNetwork[];
  /** Exact host names, lower case, without a trailing dot. */
  readonly hosts: ReadonlySet<string>;
  /** From `*.corp.example`: `.corp.example`, so subdomains match and corp.example itself does not. */
  readonly domainSuffixes: readonly string[];
}

export const EMPTY_ALLOW_LIST: AllowList = { networks: [], hosts: new Set(), domainSuffixes: [] };

/**
 * Parses UPSTREAM_ALLOW: comma-separated CIDRs (`10.0.0.0/8`, `fd00::/8`; a bare address is /32 or
 * /128) and host names (`mcp.internal`; `*.corp.example` for any subdomain). Empty entries are
 * skipped. Throws naming the first bad entry: a typo must stop the start, not open or close a hole.
 */
export function parseAllowList(spec: string): AllowList {
  const networks: IpNetwork[] = [];
  const hosts = new Set<string>();
  const domainSuffixes: string[] = [];
  for (const raw of spec.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const bad = (why: string) => new Error(`UPSTREAM_ALLOW entry "${entry}": ${why}`);
    if (entry.includes('/') || entry.includes(':') || parseIp(entry)) {
      networks.push(unmapNetwork(parseNetwork(entry, bad)));
      continue;
    }
    const name = normalizeHostname(entry);
    const wildcard = name.startsWith('*.');
    const base = wildcard ? name.slice(2) : name;
    if (!isHostName(base)) {
      throw bad(/^[\d.]+$/.test(base) ? 'not an IPv4 address (write four decimal parts, no leading zeros)' : 'not a CIDR, an IP address or a host name');
    }
    if (wildcard) domainSuffixes.push(`.${base}`);
    else hosts.add(base);
  }
  return { networks, hosts, domainSuffixes };
}

/**
 * Null when `ip` may be reached; otherwise why not. `hostname` is the name the address was
 * resolved from, for allow-list host entries. Anything that does not parse as an IP is refused.
 */
export function addressRefusal(ip: string, allow: AllowList, hostname?: string): RefusalReason | null {
  let address = parseIp(stripBrackets(ip), { zone: true });
  if (!address) return 'not-an-ip';
  if (hostname !== undefined && isAllowedHost(hostname, allow)) return null;
  // An IPv4-mapped address is the IPv4 host itself on a dual-stack socket, for refusal and allowance.
  address = unmapIPv4(address);
  if (allow.networks.some((network) => contains(network, address))) return null;
  return address.version === 4 ? refusalV4(address.bytes) : refusalV6(address.bytes);
}

/**
 * Syntax of an upstream URL at registration: http(s), a host, no userinfo. Addresses are not
 * judged here: a name can resolve anywhere later, so the guarded fetch checks at every connection.
 */
export function checkUpstreamUrl(raw: string): { url: URL } | { error: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: /^https?:\/\/(?:[/?#:]|$)/i.test(raw.trim()) ? 'a host is required' : 'not a valid URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: 'only http and https URLs are accepted' };
  if (url.username !== '' || url.password !== '') return { error: 'credentials in the URL are not accepted: use headers' };
  if (url.hostname === '') return { error: 'a host is required' };
  return { url };
}

/**
 * A strict IPv4 (four decimal parts, no leading zeros, so no octal ambiguity) or IPv6 address
 * (optionally ending in a dotted quad). `zone: true` accepts and ignores a `%zone` suffix.
 */
export function parseIp(text: string, options: { zone?: boolean } = {}): IpAddress | null {
  if (text.includes(':')) {
    const percent = text.indexOf('%');
    if (percent !== -1 && (!options.zone || percent === text.length - 1)) return null;
    const bytes = parseIPv6(percent === -1 ? text : text.slice(0, percent));
    return bytes && { version: 6, bytes };
  }
  const bytes = parseIPv4(text);
  return bytes && { version: 4, bytes };
}

function parseIPv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (const [index, part] of parts.entries()) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes[index] = value;
  }
  return bytes;
}

function parseIPv6(text: string): Uint8Array | null {
  let head = text;
  let dotted: Uint8Array | null = null;
  const lastColon = text.lastIndexOf(':');
  if (text.indexOf('.', lastColon) !== -1) {
    dotted = parseIPv4(text.slice(lastColon + 1));
    if (!dotted) return null;
    head = text.slice(0, lastColon + 1);
    if (!head.endsWith('::')) head = head.slice(0, -1);
  }
  const wanted = dotted ? 6 : 8;
  const halves = head.split('::');
  if (halves.length > 2) return null;
  const left = parseGroups(halves[0]!);
  const right = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (!left || !right) return null;
  let groups: number[];
  if (halves.length === 1) {
    if (left.length !== wanted) return null;
    groups = left;
  } else {
    const elided = wanted - left.length - right.length;
    if (elided < 1) return null;
    groups = [...left, ...new Array<number>(elided).fill(0), ...right];
  }
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  });
  if (dotted) bytes.set(dotted, 12);
  return bytes;
}

function parseGroups(text: string): number[] | null {
  if (text === '') return [];
  const groups: number[] = [];
  for (const group of text.split(':')) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return null;
    groups.push(parseInt(group, 16));
  }
  return groups;
}

function parseNetwork(entry: string, bad: (why: string) => Error): IpNetwork {
  const slash = entry.indexOf('/');
  const text = slash === -1 ? entry : entry.slice(0, slash);
  const address = parseIp(text);
  if (!address) throw bad('not an IP address or CIDR');
  const bits = address.bytes.length * 8;
  let prefix = bits;
  if (slash !== -1) {
    const length = entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(length) || Number(length) > bits) throw bad(`the prefix length must be 0-${bits}`);
    prefix = Number(length);
  }
  const network = { ...address, prefix };
  if (!isNetworkAddress(network)) throw bad('has bits set past the prefix length');
  return network;
}

/** ::ffff:10.0.0.0/104 means 10.0.0.0/8: addresses are unmapped before they are matched. */
function unmapNetwork(network: IpNetwork): IpNetwork {
  if (network.version === 6 && network.prefix >= 96 && isMappedIPv4(network.bytes)) {
    return { version: 4, bytes: network.bytes.slice(12), prefix: network.prefix - 96 };
  }
  return network;
}

function isNetworkAddress(network: IpNetwork): boolean {
  return network.bytes.every((byte, index) => {
    const kept = Math.min(8, Math.max(0, network.prefix - index * 8));
    return (byte & ~maskByte(kept) & 0xff) === 0;
  });
}

function maskByte(bits: number): number {
  return (0xff << (8 - bits)) & 0xff;
}

function contains(network: IpNetwork, address: IpAddress): boolean {
  if (network.version !== address.version) return false;
  for (let index = 0, bits = network.prefix; bits > 0; index++, bits -= 8) {
    const mask = maskByte(Math.min(8, bits));
    if ((network.bytes[index]! & mask) !== (address.bytes[index]! & mask)) return false;
  }
  return true;
}

function cidr(text: string): IpNetwork {
  return parseNetwork(text, (why) => new Error(`${text}: ${why}`));
}

const REFUSED_V4: ReadonlyArray<readonly [IpNetwork, RefusalReason]> = [
  // "This network": Linux connects 0.0.0.0 to the local host.
  [cidr('0.0.0.0/8'), 'unspecified'],
  [cidr('10.0.0.0/8'), 'private'],
  [cidr('100.64.0.0/10'), 'cgnat'],
  [cidr('127.0.0.0/8'), 'loopback'],
  // Includes the cloud metadata endpoint 169.254.169.254.
  [cidr('169.254.0.0/16'), 'link-local'],
  [cidr('172.16.0.0/12'), 'private'],
  [cidr('192.0.0.0/24'), 'reserved'],
  [cidr('192.0.2.0/24'), 'reserved'],
  [cidr('192.168.0.0/16'), 'private'],
  [cidr('198.18.0.0/15'), 'reserved'],
  [cidr('198.51.100.0/24'), 'reserved'],
  [cidr('203.0.113.0/24'), 'reserved'],
  [cidr('224.0.0.0/4'), 'multicast'],
  // Before 240/4, which contains it, for the more telling name.
  [cidr('255.255.255.255/32'), 'broadcast'],
  [cidr('240.0.0.0/4'), 'reserved'],
];

/** Where an IPv6 address carries an IPv4 one that the packet ends up at: those bytes decide. */
type Embedded = (bytes: Uint8Array) => Uint8Array[];
const LAST_32_BITS: Embedded = (bytes) => [bytes.slice(12, 16)];

const REFUSED_V6: ReadonlyArray<readonly [IpNetwork, RefusalReason | Embedded]> = [
  [cidr('::/128'), 'unspecified'],
  [cidr('::1/128'), 'loopback'],
  // IPv4-compatible (deprecated), also covers what a stack may still route as IPv4.
  [cidr('::/96'), LAST_32_BITS],
  // IPv4-translated (SIIT).
  [cidr('::ffff:0:0:0/96'), LAST_32_BITS],
  // Well-known NAT64 prefix: the translator connects to the embedded IPv4 address.
  [cidr('64:ff9b::/96'), LAST_32_BITS],
  // Local-use NAT64: the embedding depends on the operator's prefix length, and it is internal by definition.
  [cidr('64:ff9b:1::/48'), 'private'],
  // 6to4: the relay delivers to the IPv4 address in bits 16-47.
  [cidr('2002::/16'), (bytes) => [bytes.slice(2, 6)]],
  // Teredo: server in bits 32-63, client (obscured by inverting it) in the last 32 bits.
  [cidr('2001::/32'), (bytes) => [bytes.slice(4, 8), bytes.slice(12, 16).map((byte) => byte ^ 0xff)]],
  // Unique local, including AWS's IPv6 metadata endpoint fd00:ec2::254.
  [cidr('fc00::/7'), 'private'],
  [cidr('fe80::/10'), 'link-local'],
  // Deprecated site-local: still routed inside some networks.
  [cidr('fec0::/10'), 'private'],
  [cidr('ff00::/8'), 'multicast'],
  [cidr('2001:db8::/32'), 'reserved'],
  // Discard-only.
  [cidr('100::/64'), 'reserved'],
];

/** In ::ffff:0:0/96. */
function isMappedIPv4(bytes: Uint8Array): boolean {
  return bytes.length === 16 && bytes.subarray(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

function unmapIPv4(address: IpAddress): IpAddress {
  return address.version === 6 && isMappedIPv4(address.bytes) ? { version: 4, bytes: address.bytes.slice(12) } : address;
}

function refusalV4(bytes: Uint8Array): RefusalReason | null {
  const address: IpAddress = { version: 4, bytes };
  return REFUSED_V4.find(([network]) => contains(network, address))?.[1] ?? null;
}

function refusalV6(bytes: Uint8Array): RefusalReason | null {
  const address: IpAddress = { version: 6, bytes };
  const rule = REFUSED_V6.find(([network]) => contains(network, address))?.[1];
  if (rule === undefined) return null;
  if (typeof rule === 'string') return rule;
  for (const embedded of rule(bytes)) {
    const reason = refusalV4(embedded);
    if (reason) return reason;
  }
  return null;
}

function stripBrackets(text: string): string {
  return text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
}

/** `localhost` and its subdomains: loopback wherever they are asked (RFC 6761 6.3), so naming them tells nothing. */
export function isLocalhostName(hostname: string): boolean {
  const name = normalizeHostname(hostname);
  return name === 'localhost' || name.endsWith('.localhost');
}

function normalizeHostname(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** LDH labels (and `_`, which service names use), none all-numeric at the end: that would read as IPv4. */
function isHostName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  if (/^\d+$/.test(labels[labels.length - 1]!)) return false;
  return labels.every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label));
}

function isAllowedHost(hostname: string, allow: AllowList): boolean {
  const name = normalizeHostname(hostname);
  return allow.hosts.has(name) || allow.domainSuffixes.some((suffix) => name.endsWith(suffix));
}
