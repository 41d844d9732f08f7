/**
 * The pieces of the six key adapters that need no vendor: extra vendor hosts (Twilio Lookups)
 * are declared, overridable and still behind the outbound address policy; vendor error bodies of
 * Jira and Freshdesk give their own reason; plain text round-trips through Jira's ADF.
 */
import { describe, expect, it } from 'vitest';
import { loadConnectorRuntime } from '../../../shared/connectors/index.js';
import { VendorError, vendorHttp, vendorReason } from '../../../shared/connectors/providers/http.js';
import { adf, adfText } from '../../../shared/connectors/providers/jira.js';
import { createOutboundClient } from '../../../shared/outbound/index.js';

describe('extra vendor hosts', () => {
  it('CONNECTOR_<ID>_<NAME>_BASE_URL is accepted only for a host the adapter declares', () => {
    expect(() => loadConnectorRuntime({ baseUrls: { twilio: 'http://127.0.0.1:1', twilio_lookups: 'http://127.0.0.1:2' } })).not.toThrow();
    expect(() => loadConnectorRuntime({ baseUrls: { twilio_lookup: 'http://127.0.0.1:2' } })).toThrow(/CONNECTOR_TWILIO_LOOKUP_BASE_URL names no provider/);
    expect(() => loadConnectorRuntime({ baseUrls: { hubspot_lookups: 'http://127.0.0.1:2' } })).toThrow(/CONNECTOR_HUBSPOT_LOOKUPS_BASE_URL/);
    // An OAuth host only for an adapter that declares one (Jira 3LO).
    expect(() => loadConnectorRuntime({ baseUrls: { jira_oauth: 'http://127.0.0.1:3/ex/jira/{cloud_id}' } })).not.toThrow();
    expect(() => loadConnectorRuntime({ baseUrls: { slack_oauth: 'http://127.0.0.1:3' } })).toThrow(/CONNECTOR_SLACK_OAUTH_BASE_URL/);
  });

  it('a request to an extra host goes through the outbound policy; an undeclared host is a programming error', async () => {
    const outbound = createOutboundClient({ allowCidrs: [] });
    try {
      const http = vendorHttp({ outbound, baseUrl: 'https://api.twilio.com', extraBaseUrls: { lookups: 'http://127.0.0.1:9' }, headers: {}, secrets: [], timeoutMs: 1000 });
      const err = await http.request('/v2/PhoneNumbers/%2B14155550100', { base: 'lookups' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(VendorError);
      expect((err as VendorError).kind).toBe('rejected');
      await expect(http.request('/x', { base: 'pricing' })).rejects.toThrow(/undeclared base URL pricing/);
    } finally {
      await outbound.close();
    }
  });
});

describe('vendor reasons of the new vendors', () => {
  it('Jira errorMessages / errors map, Freshdesk validation with its field, Twilio and Pipedrive messages', () => {
    expect(vendorReason({ errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} })).toBe('Issue does not exist or you do not have permission to see it.');
    expect(vendorReason({ errorMessages: [], errors: { project: 'valid project is required' } })).toBe('project: valid project is required');
    expect(vendorReason({ description: 'Validation failed', errors: [{ field: 'email', message: 'It should be a valid email address', code: 'invalid_value' }] })).toBe('Validation failed: email: It should be a valid email address');
    expect(vendorReason({ code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 })).toBe('Authenticate');
    expect(vendorReason({ success: false, error: 'unauthorized access', errorCode: 401 })).toBe('unauthorized access');
    expect(vendorReason({ error: { message: 'User Not Authenticated', detail: 'Required to provide Auth information' }, status: 'failure' })).toBe('User Not Authenticated');
  });
});

describe('Atlassian Document Format', () => {
  it('one paragraph per line, read back as the same text', () => {
    const doc = adf('first\n\nthird');
    expect(doc).toEqual({ type: 'doc', version: 1, content: [{ type: 'paragraph', content: [{ type: 'text', text: 'first' }] }, { type: 'paragraph', content: [] }, { type: 'paragraph', content: [{ type: 'text', text: 'third' }] }] });
    expect(adfText(doc)).toBe('first\n\nthird');
    expect(adfText(null)).toBeNull();
  });
});
