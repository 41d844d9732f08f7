/**
 * The address policy (issue 11, "SSRF exfiltrates"): every forbidden form, in every spelling, at
 * the address level (connect time) and at the URL level (save time).
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { assertRequestUrl, assertTenantUrl, createOutboundPolicy, parseAllowCidrs, refusalReason } from '../../../shared/outbound/index.js';
import { ConfigError, loadConfig } from '../../../shared/config.js';

const strict = createOutboundPolicy();

/** Address literals (as a resolver or URL would give them) that must never be reached by default. */
const REFUSED_ADDRESSES: Array<[string, string]> = [
  ['127.0.0.1', 'loopback'],
  ['127.0.0.3', 'loopback'],
  ['2130706433', 'loopback'], // decimal
  ['0x7f000001', 'loopback'], // hex
  ['0177.0.0.1', 'loopback'], // octal
  ['127.1', 'loopback'], // short
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'linkLocal'], // cloud metadata
  ['100.64.0.1', 'carrierGradeNat'],
  ['224.0.0.1', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['0.0.0.0', 'unspecified'],
  ['240.0.0.1', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['::1', 'loopback'],
  ['::', 'unspecified'],
  ['fc00::1', 'uniqueLocal'],
  ['fd12:3456::1', 'uniqueLocal'],
  ['fe80::1', 'linkLocal'],
  ['ff02::1', 'multicast'],
  ['::ffff:127.0.0.1', 'loopback'], // IPv4-mapped
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'linkLocal'],
  ['::ffff:0:a00:1', 'private'], // IPv4-translated (RFC 6145) 10.0.0.1
  ['::7f00:1', 'reserved'], // IPv4-compatible (deprecated), as WHATWG prints [::127.0.0.1]
  ['::127.0.0.1', 'loopback'], // ipaddr.js reads this spelling as IPv4-mapped: refused either way
  ['64:ff9b::7f00:1', 'loopback'], // NAT64 of 127.0.0.1
  ['64:ff9b::a9fe:a9fe', 'linkLocal'], // NAT64 of 169.254.169.254
  ['2002:7f00:1::1', 'loopback'], // 6to4 of 127.0.0.1
  ['2002:c0a8:101::1', 'private'], // 6to4 of 192.168.1.1
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
  ['2001:db8::1', 'reserved'], // documentation
  ['[::1]', 'loopback'],
];

const PUBLIC_ADDRESSES = ['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '172.32.0.1', '100.128.0.1'];

describe('SSRF exfiltrates: the address policy', () => {
  it.each(REFUSED_ADDRESSES)('refuses %s (%s)', (address, reason) => {
    expect(refusalReason(strict, address)).toBe(reason);
  });

  it.each(PUBLIC_ADDRESSES)('allows public %s', (address) => {
    expect(refusalReason(strict, address)).toBeUndefined();
  });

  it('anything that is not an address is refused', () => {
    expect(refusalReason(strict, 'example.com')).toBe('invalid');
    expect(refusalReason(strict, '')).toBe('invalid');
  });

  it('OUTBOUND_ALLOW_CIDRS lists exceptions, IPv4 and IPv6, and nothing beyond them', () => {
    const p = createOutboundPolicy(['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32']);
    expect(refusalReason(p, '127.0.0.1')).toBeUndefined();
    expect(refusalReason(p, '::ffff:127.0.0.1')).toBeUndefined(); // same host, mapped
    expect(refusalReason(p, '127.0.0.2')).toBe('loopback');
    expect(refusalReason(p, '10.20.3.4')).toBeUndefined();
    expect(refusalReason(p, '10.21.0.1')).toBe('private');
    expect(refusalReason(p, 'fd00:1::5')).toBeUndefined();
    expect(refusalReason(p, 'fd00:2::5')).toBe('uniqueLocal');
    expect(refusalReason(p, '::1')).toBe('loopback');
  });
});

describe('OUTBOUND_ALLOW_CIDRS at config load', () => {
  it('is empty by default and canonicalized when set', () => {
    expect(loadConfig({}).outboundAllowCidrs).toEqual([]);
    expect(loadConfig({ OUTBOUND_ALLOW_CIDRS: ' 127.0.0.1/32, 10.0.0.0/8 ,::1/128,192.168.1.7' }).outboundAllowCidrs).toEqual([
      '127.0.0.1/32',
      '10.0.0.0/8',
      '::1/128',
      '192.168.1.7/32',
    ]);
    expect(parseAllowCidrs('')).toEqual([]);
  });

  it.each(['10.0.0.0/33', 'fd00::/129', 'example.com/8', 'not-a-cidr', '10.0.0.0/8;rm'])('rejects "%s" with a ConfigError naming the variable', (value) => {
    let err: unknown;
    try {
      loadConfig({ OUTBOUND_ALLOW_CIDRS: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe('OUTBOUND_ALLOW_CIDRS');
  });
});

/** URLs a workspace member might save; each must be refused at save time (literal hosts). */
const REFUSED_URLS = [
  'http://127.0.0.1:8080/x',
  'http://127.0.0.3:9/',
  'http://2130706433/',
  'http://2130706435:9/',
  'http://0x7f000001/',
  'http://0177.0.0.1/',
  'http://127.1/',
  'http://0.0.0.0/',
  'http://[::1]/',
  'http://[::]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:127.0.0.3]:9/',
  'http://[::127.0.0.1]/',
  'http://[64:ff9b::7f00:1]/',
  'http://[2002:7f00:1::1]/',
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00::1]/',
  'http://[fe80::1]/',
  'http://10.0.0.1/',
  'http://100.64.0.1/',
  'http://224.0.0.1/',
  'http://localhost:8080/',
  'http://LOCALHOST./',
  'http://api.localhost/',
];

describe('webhook URL / tool URL / base_url at save time', () => {
  it.each(REFUSED_URLS)('refuses %s as 400 INVALID_REQUEST naming the field', (url) => {
    let err: unknown;
    try {
      assertTenantUrl(url, 'webhook_url', strict);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'INVALID_REQUEST', status: 400, details: [{ field: 'webhook_url' }] });
  });

  it('refuses other schemes and credentials in the URL', () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'https://user:pw@example.com/', 'https://token@example.com/']) {
      expect(() => assertTenantUrl(url, 'endpoint_url', strict)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', details: [expect.objectContaining({ field: 'endpoint_url' })] }));
    }
  });

  it('accepts public names and addresses; names are only judged at connect time (no DNS at save)', () => {
    for (const url of ['https://api.example.com/v1', 'http://93.184.215.14/', 'https://[2606:4700:4700::1111]/', 'https://internal.corp.example/']) {
      expect(assertTenantUrl(url, 'base_url', strict).href).toBe(new URL(url).href);
    }
  });

  it('an operator-listed CIDR is accepted at save time, localhost only when loopback is listed', () => {
    const local = createOutboundPolicy(['127.0.0.1/32']);
    expect(() => assertTenantUrl('http://127.0.0.1:11434/v1', 'base_url', local)).not.toThrow();
    expect(() => assertTenantUrl('http://localhost:11434/v1', 'base_url', local)).not.toThrow();
    expect(() => assertTenantUrl('http://127.0.0.2:11434/v1', 'base_url', local)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
  });

  it('the call-time form says OUTBOUND_REFUSED and names the host, nothing internal', () => {
    let err: AppError | undefined;
    try {
      assertRequestUrl('http://2130706433:9/secret/path?token=abc', strict);
    } catch (e) {
      err = e as AppError;
    }
    expect(err).toMatchObject({ code: 'OUTBOUND_REFUSED', status: 400 });
    expect(err!.message).toContain('"127.0.0.1"');
    expect(err!.message).not.toMatch(/secret|token|abc/);
  });
});
