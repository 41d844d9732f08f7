/**
 * Start-up configuration checks that have no domain of their own: the carrier switches, addresses
 * and rates (read raw by the carrier adapters, so checked here), and the listen address.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../shared/config.js';

function refused(env: Record<string, string>): string | undefined {
  try {
    loadConfig(env);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).variable;
  }
}

describe('carrier variables', () => {
  it('*_VERIFY_SIGNATURE reads like every boolean: 0/no/off turn verification off, anything else is refused', () => {
    for (const v of ['false', '0', 'no', 'OFF']) expect(loadConfig({ SIGNALWIRE_VERIFY_SIGNATURE: v }).carrierEnv.SIGNALWIRE_VERIFY_SIGNATURE).toBe('false');
    for (const v of ['true', '1', 'yes']) expect(loadConfig({ TELNYX_VERIFY_SIGNATURE: v }).carrierEnv.TELNYX_VERIFY_SIGNATURE).toBe('true');
    expect(refused({ PLIVO_VERIFY_SIGNATURE: 'disabled' })).toBe('PLIVO_VERIFY_SIGNATURE');
    expect(refused({ EXOTEL_VERIFY_SIGNATURE: 'nope' })).toBe('EXOTEL_VERIFY_SIGNATURE');
  });

  it('API base URLs and the SignalWire space URL must be http(s) URLs', () => {
    expect(loadConfig({ TELNYX_API_BASE_URL: 'http://127.0.0.1:9999' }).carrierEnv.TELNYX_API_BASE_URL).toBe('http://127.0.0.1:9999');
    expect(refused({ TELNYX_API_BASE_URL: 'notaurl' })).toBe('TELNYX_API_BASE_URL');
    expect(refused({ EXOTEL_API_BASE_URL: 'ftp://x' })).toBe('EXOTEL_API_BASE_URL');
    expect(refused({ SIGNALWIRE_SPACE_URL: 'acme.signalwire.com' })).toBe('SIGNALWIRE_SPACE_URL');
  });

  it('VONAGE_SAMPLE_RATE_HZ is 8000 or 16000', () => {
    expect(loadConfig({ VONAGE_SAMPLE_RATE_HZ: '16000' }).carrierEnv.VONAGE_SAMPLE_RATE_HZ).toBe('16000');
    expect(refused({ VONAGE_SAMPLE_RATE_HZ: '12345' })).toBe('VONAGE_SAMPLE_RATE_HZ');
  });

  it('credentials pass through as given (the adapters check their shapes)', () => {
    expect(loadConfig({ PLIVO_AUTH_ID: ' MAXXXXXXXXXXXXXXXXXX ' }).carrierEnv.PLIVO_AUTH_ID).toBe('MAXXXXXXXXXXXXXXXXXX');
  });
});

describe('HOST', () => {
  it('is an IP literal or localhost', () => {
    expect(loadConfig({}).host).toBe('0.0.0.0');
    for (const h of ['127.0.0.1', '::', '::1', 'localhost']) expect(loadConfig({ HOST: h }).host).toBe(h);
    expect(refused({ HOST: 'not-an-address' })).toBe('HOST');
  });
});

describe('NODE_ENV and REDIS_URL', () => {
  it('NODE_ENV is production, development or test: a typo stops the start naming it (it ran as development)', () => {
    for (const v of ['prod', 'Production', 'staging']) expect(refused({ NODE_ENV: v })).toBe('NODE_ENV');
    for (const v of ['production', 'development', 'test']) expect(refused({ NODE_ENV: v, SECRETS_KEY: 'a'.repeat(64), SMTP_URL: 'smtp://mail:25' })).toBeUndefined();
  });

  it('a single-server REDIS_URL path is a database number (the client threw a TypeError and a stack)', () => {
    expect(refused({ REDIS_URL: 'redis://127.0.0.1:6379/abc' })).toBe('REDIS_URL');
    expect(refused({ REDIS_URL: 'redis://127.0.0.1:6379/1/2' })).toBe('REDIS_URL');
    for (const v of ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379/', 'redis://127.0.0.1:6379/7', 'rediss://u:p@h:6380/0']) expect(loadConfig({ REDIS_URL: v }).redisUrl).toBe(v);
  });
});

describe('production', () => {
  const KEY = 'a'.repeat(64);
  it('needs SECRETS_KEY on every role and SMTP_URL where the API runs, refused as the configuration loads', () => {
    expect(refused({ NODE_ENV: 'production', SMTP_URL: 'smtp://mail:25' })).toBe('SECRETS_KEY');
    expect(refused({ NODE_ENV: 'production', ROLE: 'media-engine' })).toBe('SECRETS_KEY');
    expect(refused({ NODE_ENV: 'production', SECRETS_KEY: KEY })).toBe('SMTP_URL');
    expect(refused({ NODE_ENV: 'production', ROLE: 'control-plane', SECRETS_KEY: KEY })).toBe('SMTP_URL');
    expect(loadConfig({ NODE_ENV: 'production', ROLE: 'media-engine', SECRETS_KEY: KEY }).role).toBe('media-engine');
    expect(loadConfig({ NODE_ENV: 'production', SECRETS_KEY: KEY, SMTP_URL: 'smtp://mail:25' }).nodeEnv).toBe('production');
  });
});
