import { describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../../../shared/config.js';
import { metricsAccess } from '../../../shared/observability/metrics.js';

const TOKEN = 'a-metrics-token-0123456789';

describe('metrics access', () => {
  it('with a token: the token alone decides, whatever the peer', () => {
    const policy = { token: TOKEN, production: true };
    expect(metricsAccess(policy, `Bearer ${TOKEN}`, '203.0.113.9')).toBe('ok');
    expect(metricsAccess(policy, `bearer ${TOKEN}`, '203.0.113.9')).toBe('ok');
    expect(metricsAccess(policy, undefined, '127.0.0.1')).toBe('unauthorized');
    expect(metricsAccess(policy, `Bearer ${TOKEN}x`, '127.0.0.1')).toBe('unauthorized');
    expect(metricsAccess(policy, TOKEN, '127.0.0.1')).toBe('unauthorized');
    expect(metricsAccess(policy, `Bearer ${TOKEN} extra`, '127.0.0.1')).toBe('unauthorized');
  });

  it('without a token: loopback peers in development, nobody in production', () => {
    const dev = { production: false };
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) expect(metricsAccess(dev, undefined, peer)).toBe('ok');
    for (const peer of ['10.0.0.5', '::ffff:10.0.0.5', '2001:db8::1', '']) expect(metricsAccess(dev, undefined, peer)).toBe('forbidden');
    expect(metricsAccess({ production: true }, undefined, '127.0.0.1')).toBe('disabled');
    expect(metricsAccess({ production: true }, `Bearer ${TOKEN}`, '127.0.0.1')).toBe('disabled');
  });

  it('METRICS_TOKEN and OTEL_EXPORTER_OTLP_ENDPOINT are validated', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(ConfigError);
    expect(() => loadConfig({ METRICS_TOKEN: 'has a space in the middle' })).toThrow(/METRICS_TOKEN/);
    expect(loadConfig({ METRICS_TOKEN: TOKEN }).metricsToken).toBe(TOKEN);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    const c = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' });
    expect(c.otelEndpoint).toBe('http://collector:4318');
    expect(c.otelServiceName).toBe('voiceplane');
    expect(loadConfig({}).otelEndpoint).toBeUndefined();
  });
});
