/**
 * Workspace carrier accounts (issue 24): set in `PUT /call-center/settings` `carriers`, secrets
 * encrypted and answered masked, validated per carrier field; an agent whose binding has no
 * credentials dials with them, and outbound auto-detection picks their carrier.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';

let h: TelephonyHarness;
let agentId = '';
const NUMBER = '+14155551301';

beforeAll(async () => {
  h = await startTelephonyHarness({ carrier: 'telnyx' });
  // No credentials on the binding: everything comes from the workspace account.
  agentId = await h.createAgent({ number: NUMBER, direction: 'outbound', withAccount: false });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('workspace carrier accounts', () => {
  it('rejects what is not a carrier field, naming it', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ carrier_pigeon: {} }, /carriers\.carrier_pigeon/],
      [{ telnyx: { password: 'x' } }, /carriers\.telnyx\.password/],
      [{ telnyx: { auth_token: 'not-a-key' } }, /carriers\.telnyx\.auth_token/],
      [{ telnyx: { auth_token: 42 } }, /carriers\.telnyx\.auth_token/],
      [{ telnyx: 'KEY123' }, /carriers\.telnyx/],
      [{ signalwire: { space_url: 'ftp://example.com' } }, /carriers\.signalwire\.space_url/],
      // A workspace's space is a SignalWire host: not an address of ours, not any other host.
      [{ signalwire: { space_url: 'http://127.0.0.1:6379' } }, /carriers\.signalwire\.space_url/],
      [{ signalwire: { space_url: 'https://internal.example.com' } }, /carriers\.signalwire\.space_url/],
      [{ signalwire: { space_url: 'https://acme.signalwire.com.evil.net' } }, /carriers\.signalwire\.space_url/],
    ];
    for (const [carriers, field] of cases) {
      const res = await h.call('PUT', '/call-center/settings', { carriers });
      expect(res.status, JSON.stringify(carriers)).toBe(400);
      expect(JSON.stringify(res.body.error)).toMatch(field);
    }
  });

  it('without an account the agent has no usable credentials (503)', async () => {
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: '+14155551390' });
    expect(res.status).toBe(503);
  });

  it('stores secrets encrypted, answers them masked, and dials with them (carrier auto-detected)', { timeout: 30_000 }, async () => {
    const put = await h.call('PUT', '/call-center/settings', { carriers: { telnyx: { account_sid: h.accountSid, auth_token: h.authToken, public_key: h.telnyx!.publicKey } } });
    expect(put.status).toBe(200);
    const masked = `••••${h.authToken.slice(-4)}`;
    expect(put.body.data.carriers).toEqual({ telnyx: { account_sid: h.accountSid, auth_token: masked, public_key: h.telnyx!.publicKey } });
    // The webhook settings were not touched by a carriers-only PUT.
    expect(put.body.data).toMatchObject({ webhook_url: '', has_webhook_secret: false });

    const get = await h.call('GET', '/call-center/settings');
    expect(get.body.data.carriers.telnyx.auth_token).toBe(masked);
    expect(JSON.stringify(get.body)).not.toContain(h.authToken);
    const [row] = await h.infra.sql<{ fields: Record<string, string>; secrets_enc: string }[]>`select fields, secrets_enc from workspace_carrier_accounts where workspace_id = ${h.user.workspaceId} and carrier = 'telnyx'`;
    expect(row!.fields).toEqual({ account_sid: h.accountSid, public_key: h.telnyx!.publicKey });
    expect(row!.secrets_enc).not.toContain(h.authToken);

    // A masked value sent back keeps the stored secret.
    expect((await h.call('PUT', '/call-center/settings', { carriers: { telnyx: { auth_token: masked } } })).status).toBe(200);

    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: '+14155551391' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.telephony_provider).toBe('telnyx');
    const call = await h.telnyx!.waitForCall((c) => c.callControlId === res.body.provider_call_sid);
    expect(call.dial.connection_id).toBe(h.accountSid);
    // The simulator accepts only the workspace's API key: the call exists, so it was sent.
    await h.call('POST', `/telephony/calls/${res.body.call_id}/end`);
    await call.ended;

    // An agent bound to a Twilio account, dialing through Telnyx by name: Telnyx gets the
    // workspace's Telnyx account, never the Twilio SID and token (they were sent as its key).
    const twilioBound = await h.createAgent({ number: '+14155551302', direction: 'outbound', withAccount: false });
    const twilioToken = 'f9803c0b329eab0ed1ebb17a7866331c';
    const bind = await h.call('PUT', `/agents/${twilioBound}/telephony`, { carrier_phone_number: '+14155551302', call_direction: 'outbound', carrier_account_sid: `AC${'d'.repeat(32)}`, carrier_auth_token: twilioToken });
    expect(bind.status, JSON.stringify(bind.body)).toBe(200);
    expect((await h.call('POST', `/agents/${twilioBound}/versions/publish`)).status).toBe(200);
    const byName = await h.call('POST', '/telephony/calls/outbound', { agent_id: twilioBound, to_number: '+14155551392', telephony_provider: 'telnyx' });
    expect(byName.status, JSON.stringify(byName.body)).toBe(200);
    const viaTelnyx = await h.telnyx!.waitForCall((c) => c.callControlId === byName.body.provider_call_sid);
    expect(viaTelnyx.dial.connection_id).toBe(h.accountSid);
    await h.call('POST', `/telephony/calls/${byName.body.call_id}/end`);
    await viaTelnyx.ended;
  });

  it('removes an account with null', async () => {
    const res = await h.call('PUT', '/call-center/settings', { carriers: { telnyx: null } });
    expect(res.status).toBe(200);
    expect(res.body.data.carriers).toEqual({});
    expect((await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: '+14155551392' })).status).toBe(503);
  });
});
