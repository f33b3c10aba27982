import { describe, expect, it } from 'vitest';
import { addressRefusal, checkUpstreamUrl, EMPTY_ALLOW_LIST, parseAllowList, parseIp } from '../../src/upstream/address-policy.js';

/** The host a URL ends up with, judged with no allow list: the path every registration takes. */
function refusalOfUrl(raw: string): string | null {
  const checked = checkUpstreamUrl(raw);
  if ('error' in checked) throw new Error(checked.error);
  return addressRefusal(checked.url.hostname, EMPTY_ALLOW_LIST);
}

describe('addressRefusal with no allow list', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.254', 'reserved'],
    ['255.255.255.255', 'broadcast'],
  ])('refuses IPv4 %s as %s', (ip, reason) => {
    expect(addressRefusal(ip, EMPTY_ALLOW_LIST)).toBe(reason);
  });

  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'private'],
    ['fd00:ec2::254', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['64:ff9b:1::a', 'private'],
  ])('refuses IPv6 %s as %s', (ip, reason) => {
    expect(addressRefusal(ip, EMPTY_ALLOW_LIST)).toBe(reason);
  });

  it.each([
    // IPv4-mapped, every spelling.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local'],
    ['::FFFF:A9FE:A9FE', 'link-local'],
    ['::ffff:10.1.2.3', 'private'],
    // IPv4-compatible.
    ['::127.0.0.1', 'loopback'],
    ['::a9fe:a9fe', 'link-local'],
    // IPv4-translated (SIIT).
    ['::ffff:0:7f00:1', 'loopback'],
    // NAT64.
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::169.254.169.254', 'link-local'],
    ['64:ff9b::7f00:1', 'loopback'],
    // 6to4.
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'],
    ['2002:c0a8:101::', 'private'],
    // Teredo: the client address is inverted in the last 32 bits; the server sits in bits 32-63.
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'],
    ['2001:0:7f00:1:8000:63bf:a2d4:f7e1', 'loopback'],
  ])('refuses %s by the IPv4 address it embeds (%s)', (ip, reason) => {
    expect(addressRefusal(ip, EMPTY_ALLOW_LIST)).toBe(reason);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.1',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '[2606:4700:4700::1111]',
    '::ffff:93.184.216.34',
    '64:ff9b::5db8:d822',
    '2002:5db8:d822::1',
    '2001:0:4136:e378:8000:63bf:a247:27dd',
  ])('allows public %s', (ip) => {
    expect(addressRefusal(ip, EMPTY_ALLOW_LIST)).toBeNull();
  });

  it.each([
    'localhost',
    '',
    '127.1',
    '0177.0.0.1',
    '0x7f.0.0.1',
    '2130706433',
    '1.2.3.4.5',
    '256.0.0.1',
    '::ffff:1.2.3',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    ':::',
    'fe80::1%',
    '[::1',
  ])('refuses %s, which is not an IP address in canonical form', (text) => {
    expect(addressRefusal(text, EMPTY_ALLOW_LIST)).toBe('not-an-ip');
  });
});

describe('URLs through the whole path (WHATWG normalises the host first)', () => {
  it.each([
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://0177.1/',
    'http://127.1/',
    'http://127.0.0.1./',
    'http://127.000.000.001/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
  ])('refuses %s as loopback', (raw) => {
    expect(refusalOfUrl(raw)).toBe('loopback');
  });

  it.each([
    ['http://0.0.0.0:6379/', 'unspecified'],
    ['http://0/', 'unspecified'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local'],
    ['http://2852039166/', 'link-local'],
    ['http://[0:0:0:0:0:ffff:a9fe:a9fe]/', 'link-local'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'link-local'],
    ['http://[2002:7f00:1::]/', 'loopback'],
    ['http://[fd00:ec2::254]/', 'private'],
    ['http://100.64.0.1/', 'cgnat'],
    ['https://10.0.0.1:8443/mcp', 'private'],
  ])('refuses %s as %s', (raw, reason) => {
    expect(refusalOfUrl(raw)).toBe(reason);
  });

  it('leaves names to the resolver: localhost is judged by what it resolves to', () => {
    const checked = checkUpstreamUrl('http://localhost:8080/mcp');
    expect('url' in checked && checked.url.hostname).toBe('localhost');
    expect(addressRefusal('127.0.0.1', EMPTY_ALLOW_LIST, 'localhost')).toBe('loopback');
    expect(addressRefusal('::1', EMPTY_ALLOW_LIST, 'localhost')).toBe('loopback');
  });

  it('allows a public address however spelled', () => {
    expect(refusalOfUrl('http://1572395042/')).toBeNull();
    expect(refusalOfUrl('https://[2606:4700::1111]/mcp')).toBeNull();
  });
});

describe('parseAllowList', () => {
  const allow = parseAllowList(' 10.0.0.0/8, 127.0.0.1/32 ,fd00::/8, 192.168.1.5, ::1, mcp.internal, *.corp.example, MCP.Example.');

  it('allows addresses in its CIDRs, bare addresses as /32 and /128', () => {
    expect(addressRefusal('10.20.30.40', allow)).toBeNull();
    expect(addressRefusal('127.0.0.1', allow)).toBeNull();
    expect(addressRefusal('127.0.0.2', allow)).toBe('loopback');
    expect(addressRefusal('fd00:ec2::254', allow)).toBeNull();
    expect(addressRefusal('fc00::1', allow)).toBe('private');
    expect(addressRefusal('192.168.1.5', allow)).toBeNull();
    expect(addressRefusal('192.168.1.6', allow)).toBe('private');
    expect(addressRefusal('::1', allow)).toBeNull();
    expect(addressRefusal('169.254.169.254', allow)).toBe('link-local');
  });

  it('treats an IPv4-mapped address as the IPv4 address, both ways', () => {
    expect(addressRefusal('::ffff:127.0.0.1', allow)).toBeNull();
    expect(addressRefusal('::ffff:a00:1', allow)).toBeNull();
    const mapped = parseAllowList('::ffff:10.0.0.0/104');
    expect(addressRefusal('10.9.9.9', mapped)).toBeNull();
    expect(addressRefusal('11.0.0.1', mapped)).toBeNull();
    expect(addressRefusal('172.16.0.1', mapped)).toBe('private');
  });

  it('allows any address of an allowed host name, case and trailing dot aside', () => {
    expect(addressRefusal('10.1.1.1', parseAllowList('mcp.internal'), 'mcp.internal')).toBeNull();
    expect(addressRefusal('172.16.0.9', allow, 'MCP.INTERNAL.')).toBeNull();
    expect(addressRefusal('172.16.0.9', allow, 'mcp.example')).toBeNull();
    expect(addressRefusal('172.16.0.9', allow, 'other.internal')).toBe('private');
    expect(addressRefusal('172.16.0.9', allow, 'evil-mcp.internal')).toBe('private');
    expect(addressRefusal('172.16.0.9', allow, 'mcp.internal.evil.com')).toBe('private');
  });

  it('matches a wildcard against subdomains only', () => {
    expect(addressRefusal('172.16.0.9', allow, 'tools.corp.example')).toBeNull();
    expect(addressRefusal('172.16.0.9', allow, 'a.b.corp.example')).toBeNull();
    expect(addressRefusal('172.16.0.9', allow, 'corp.example')).toBe('private');
    expect(addressRefusal('172.16.0.9', allow, 'evilcorp.example')).toBe('private');
  });

  it('is empty for an empty spec and skips empty entries', () => {
    expect(parseAllowList('')).toEqual({ networks: [], hosts: new Set(), domainSuffixes: [] });
    expect(parseAllowList(' , ,').networks).toHaveLength(0);
    expect(addressRefusal('127.0.0.1', parseAllowList(''))).toBe('loopback');
  });

  it.each([
    ['10.0.0.1/8', 'bits set past the prefix'],
    ['10.0.0.0/33', 'prefix length must be 0-32'],
    ['fd00::/129', 'prefix length must be 0-128'],
    ['10.0.0.0/', 'prefix length'],
    ['10.0.0.0/x', 'prefix length'],
    ['010.0.0.0/8', 'not an IP address'],
    ['010.0.0.1', 'no leading zeros'],
    ['300.1.1.1', 'not an IPv4 address'],
    ['127.1', 'not an IPv4 address'],
    ['fe80::1%eth0', 'not an IP address'],
    ['1:2:3', 'not an IP address'],
    ['[::1]', 'not an IP address or CIDR'],
    ['*', 'not a CIDR'],
    ['*.', 'not a CIDR'],
    ['a..b', 'not a CIDR'],
    ['-bad.example', 'not a CIDR'],
    ['http://mcp.internal', 'not an IP address'],
    ['mcp internal', 'not a CIDR'],
    ['*.*.example', 'not a CIDR'],
  ])('rejects %s', (entry, why) => {
    expect(() => parseAllowList(`mcp.internal, ${entry}`)).toThrow(`UPSTREAM_ALLOW entry "${entry}": `);
    expect(() => parseAllowList(entry)).toThrow(why);
  });
});

describe('parseIp', () => {
  it.each([
    ['1::', [1, 1]],
    ['::1', [15, 1]],
    ['1:2:3:4:5:6:7::', [13, 7]],
    ['::2:3:4:5:6:7:8', [15, 8]],
    ['1:2:3:4:5:6:1.2.3.4', [15, 4]],
    ['::1.2.3.4', [12, 1]],
  ])('reads %s', (text, [index, value]) => {
    expect(parseIp(text)?.bytes[index!]).toBe(value);
  });

  it.each(['1:2:3:4:5:6:7:8::', '1:2:3:4:5:6:7:1.2.3.4', ':1::', '1::2:', '12345::', 'g::1', '::1.2.3', '1.2.3.4::'])('rejects %s', (text) => {
    expect(parseIp(text)).toBeNull();
  });
});

describe('checkUpstreamUrl', () => {
  it('accepts http and https with a host', () => {
    expect(checkUpstreamUrl('https://mcp.example.com/mcp')).toEqual({ url: new URL('https://mcp.example.com/mcp') });
    expect(checkUpstreamUrl('http://mcp.example.com:8080/')).toHaveProperty('url');
  });

  it.each(['ftp://example.com/', 'file:///etc/passwd', 'gopher://127.0.0.1:6379/_INFO', 'ws://example.com/', 'javascript:alert(1)', 'data:text/plain,x'])(
    'refuses the scheme of %s',
    (raw) => {
      expect(checkUpstreamUrl(raw)).toEqual({ error: 'only http and https URLs are accepted' });
    },
  );

  it.each(['http://user:pass@example.com/', 'https://token@example.com/', 'http://:secret@example.com/'])('refuses credentials in %s', (raw) => {
    expect(checkUpstreamUrl(raw)).toEqual({ error: 'credentials in the URL are not accepted: use headers' });
  });

  it.each(['http://', 'https://', 'http:///', 'http://:80/', 'http://?x'])('requires a host in %s', (raw) => {
    expect(checkUpstreamUrl(raw)).toEqual({ error: 'a host is required' });
  });

  it('says when the text is not a URL', () => {
    expect(checkUpstreamUrl('mcp.example.com')).toEqual({ error: 'not a valid URL' });
    expect(checkUpstreamUrl('http://exa mple.com/')).toEqual({ error: 'not a valid URL' });
  });
});
