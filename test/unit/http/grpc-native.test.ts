import { describe, expect, it } from 'vitest';
import { peerAddress } from '../../../control-plane/http/grpc-native.js';
import { ConfigError, loadConfig } from '../../../shared/config.js';

describe('peerAddress', () => {
  it('takes the address out of grpc-js peer strings', () => {
    expect(peerAddress('ipv4:127.0.0.1:50512')).toBe('127.0.0.1');
    expect(peerAddress('ipv6:[::1]:50512')).toBe('::1');
    expect(peerAddress('ipv6:[2001:db8::7]:443')).toBe('2001:db8::7');
    // What a grpc-js 1.14 server's getPeer() says: address:port, IPv6 without brackets.
    expect(peerAddress('127.0.0.1:47988')).toBe('127.0.0.1');
    expect(peerAddress('::1:47988')).toBe('::1');
    expect(peerAddress('::ffff:127.0.0.1:47988')).toBe('::ffff:127.0.0.1');
    expect(peerAddress('2001:db8::7:443')).toBe('2001:db8::7');
    expect(peerAddress('::1')).toBe('::1');
    expect(peerAddress('10.0.0.5')).toBe('10.0.0.5');
    expect(peerAddress('unknown')).toBe('unknown');
    expect(peerAddress('unix:/tmp/sock')).toBe('unix:/tmp/sock');
    expect(peerAddress('')).toBe('unknown');
  });
});

describe('GRPC_PORT', () => {
  it('is off when unset, a port when set, and names itself when wrong', () => {
    expect(loadConfig({}).grpcPort).toBeUndefined();
    expect(loadConfig({ GRPC_PORT: '8082' }).grpcPort).toBe(8082);
    expect(loadConfig({ GRPC_PORT: '0' }).grpcPort).toBe(0);
    expect(() => loadConfig({ GRPC_PORT: 'grpc' })).toThrow(ConfigError);
    expect(() => loadConfig({ GRPC_PORT: '70000' })).toThrow(/GRPC_PORT/);
  });
});
