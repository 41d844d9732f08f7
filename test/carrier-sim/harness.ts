/**
 * The whole platform around a carrier simulator, for telephony end-to-end tests: real Postgres and
 * Redis (`startTestInfra`), the full control plane (`startControlPlane`), one engine node sharing
 * its registry (sim providers, the real conversation writer plus a capturing recorder), and the
 * carrier simulator that the control plane dials through (`TWILIO_API_BASE_URL`).
 * Agents are made over REST like a customer would: create, providers, telephony, publish.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from '../../control-plane/app.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm, type SimLlmOptions, type SimLlmScript } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import type { CallEndRecord, CallRecorder, TurnRecord } from '../../media-engine/session/recorder.js';
import { api, createTestUser, type ApiResponse, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { CarrierSim, type CalleeBehaviour } from './carrier.js';
import { simAccountSid } from './index.js';
import { TelnyxSim } from './telnyx.js';

/** The carriers the harness can put in front of the platform (each with its simulator). */
export type HarnessCarrier = 'twilio' | 'signalwire' | 'telnyx';

export interface CapturedCall {
  sessionId: string;
  callId?: string;
  turns: TurnRecord[];
  end?: CallEndRecord;
}

export interface TelephonyHarness {
  infra: TestInfra;
  app: ControlPlane;
  engine: EngineNode;
  /** The carrier in front (default twilio). */
  carrier: HarnessCarrier;
  /** Twilio-compatible simulator (Twilio, SignalWire flavor). */
  sim: CarrierSim;
  /** The Telnyx simulator when `carrier` is telnyx. */
  telnyx?: TelnyxSim;
  /** SignalWire: the project's webhook signing key (not the API token). */
  signingKey?: string;
  writer: ConversationWriter;
  accountSid: string;
  authToken: string;
  user: TestUser;
  /** Captured recorder callbacks by session id. */
  captured: Map<string, CapturedCall>;
  /** Callee behaviour by dialled number (outbound calls). */
  callees: Map<string, CalleeBehaviour>;
  /** REST under /api/v1 with the user's token (or another one). */
  call(method: string, path: string, body?: unknown, token?: string): Promise<ApiResponse>;
  createAgent(o: AgentSpec): Promise<string>;
  /** Another verified user (own workspace). */
  newUser(): Promise<TestUser>;
  inboundUrl(): string;
  close(): Promise<void>;
}

export interface AgentSpec {
  number?: string;
  direction?: 'inbound' | 'outbound' | 'both';
  metadata?: Record<string, unknown>;
  welcome?: string;
  /** Caller silence before an idle nudge. Default 20 000 ms. */
  silenceTimeoutMs?: number;
  /** Store the carrier account on the agent (default true). */
  withAccount?: boolean;
  token?: string;
  /** Owner (default: the harness user); its first workspace holds the agent. */
  owner?: TestUser;
  /** Published with `is_active` false (default true). */
  inactive?: boolean;
}

export async function startTelephonyHarness(
  o: {
    script?: SimLlmScript;
    env?: Record<string, string>;
    app?: ControlPlaneOptions;
    /** Read at each call's start: e.g. a slow LLM for some calls. */ llm?: () => Partial<SimLlmOptions>;
    /** The carrier to simulate (default twilio). */
    carrier?: HarnessCarrier;
    /** Telnyx: the streams' codec. */
    codec?: 'pcmu' | 'pcma';
    /** Telnyx: the fraction of real time its audio (speech, hold rounds) plays in (default 0.01). */
    mediaScale?: number;
    /** Also configure the account as the deployment's (environment variables): e.g. for refusals of unbound numbers on event carriers. */
    envAccount?: boolean;
  } = {},
): Promise<TelephonyHarness> {
  const carrier = o.carrier ?? 'twilio';
  // Account id and secret in each carrier's shape: outbound auto-detection reads them.
  const accountSid = carrier === 'signalwire' ? randomUUID() : carrier === 'telnyx' ? String(1_000_000_000 + Math.floor(Math.random() * 1e9)) : simAccountSid();
  const authToken = carrier === 'telnyx' ? `KEY${randomBytes(12).toString('hex').toUpperCase()}_${randomBytes(8).toString('hex')}` : randomBytes(16).toString('hex');
  const signingKey = carrier === 'signalwire' ? `PSK_${randomBytes(12).toString('hex')}` : undefined;
  const callees = new Map<string, CalleeBehaviour>();
  const sim = new CarrierSim({
    accounts: { [accountSid]: authToken },
    callee: (to) => callees.get(to) ?? {},
    flavor: carrier === 'signalwire' ? { pathPrefix: '/api/laml', signatureHeader: 'x-signalwire-signature', signingKeys: { [accountSid]: signingKey! }, lamlRecordings: true } : undefined,
  });
  await sim.start();
  const telnyx = carrier === 'telnyx' ? new TelnyxSim({ apiKeys: [authToken], callee: (to) => callees.get(to) ?? {}, codec: o.codec, mediaScale: o.mediaScale }) : undefined;
  await telnyx?.start();
  const carrierEnv: Record<string, string> =
    carrier === 'signalwire'
      ? { SIGNALWIRE_SPACE_URL: sim.url, SIGNALWIRE_SIGNING_KEY: signingKey! }
      : carrier === 'telnyx'
        ? { TELNYX_API_BASE_URL: telnyx!.url, TELNYX_PUBLIC_KEY: telnyx!.publicKey }
        : {};
  if (o.envAccount) {
    if (carrier === 'telnyx') Object.assign(carrierEnv, { TELNYX_API_KEY: authToken, TELNYX_CONNECTION_ID: accountSid });
    else if (carrier === 'signalwire') Object.assign(carrierEnv, { SIGNALWIRE_PROJECT_ID: accountSid, SIGNALWIRE_API_TOKEN: authToken });
    else Object.assign(carrierEnv, { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken });
  }
  const infra = await startTestInfra({}, { TWILIO_API_BASE_URL: sim.url, ...carrierEnv, ...o.env });
  const app = await startControlPlane(infra, { ...o.app, port: 0, host: '127.0.0.1' });
  const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 50 });
  const captured = new Map<string, CapturedCall>();
  const engine = await startEngineNode({
    config: infra.config,
    logger: infra.logger,
    clock: infra.clock,
    registry: infra.registry,
    port: 0,
    heartbeatMs: 500,
    providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({ ttftMs: 20, tokensPerSecond: 400, script: o.script, ...o.llm?.() }), tts: createSimTts({ ttfbMs: 10 }) }),
    recorderFactory: (c, nodeId) => both(writer.recorderFor(c, nodeId), capture(captured, c.session_id, c.call_id)),
    // Connector tools on calls read connections and open their credentials like production does.
    sql: infra.sql,
    secrets: infra.secrets,
  });
  const user = await createTestUser(app);
  const call = async (method: string, path: string, body?: unknown, token = user.token) => api(app, method, `/api/v1${path}`, { token, body });

  async function must(res: Promise<ApiResponse>, what: string): Promise<ApiResponse> {
    const r = await res;
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  }

  return {
    infra,
    app,
    engine,
    carrier,
    sim,
    telnyx,
    signingKey,
    writer,
    accountSid,
    authToken,
    user,
    captured,
    callees,
    call,
    inboundUrl: () => `http://127.0.0.1:${app.port}/api/v1/telephony/calls/inbound${carrier === 'twilio' ? '' : `/${carrier}`}`,
    newUser: () => createTestUser(app),
    async createAgent(spec) {
      const owner = spec.owner ?? user;
      const call = (method: string, path: string, body?: unknown) => api(app, method, `/api/v1${path}`, { token: owner.token, body });
      const created = await must(
        call('POST', '/agents', { workspace_id: owner.workspaceId, name: `tel-${randomBytes(3).toString('hex')}`, system_prompt: 'You answer phone calls.', welcome_message: spec.welcome ?? 'hello caller', metadata: spec.metadata ?? {}, silence_timeout_ms: spec.silenceTimeoutMs ?? 20_000, is_active: !spec.inactive }),
        'create agent',
      );
      const id = created.body.data.id as string;
      for (const kind of ['asr', 'llm', 'tts']) await must(call('POST', `/agents/${id}/providers`, { provider_type: kind, provider_name: 'sim' }), `provider ${kind}`);
      const withAccount = spec.withAccount ?? true;
      await must(
        call('PUT', `/agents/${id}/telephony`, {
          carrier_phone_number: spec.number ?? '',
          call_direction: spec.direction ?? 'both',
          carrier_account_sid: withAccount ? accountSid : '',
          carrier_auth_token: withAccount ? (spec.token ?? authToken) : '',
        }),
        'telephony',
      );
      await must(call('POST', `/agents/${id}/versions/publish`), 'publish');
      return id;
    },
    async close() {
      await sim.close();
      await telnyx?.close();
      await engine.close();
      await writer.close();
      await app.close();
      await infra.close();
    },
  };
}

function capture(map: Map<string, CapturedCall>, sessionId: string, callId?: string): CallRecorder {
  const c: CapturedCall = { sessionId, callId, turns: [] };
  map.set(sessionId, c);
  return { start: () => {}, turn: (t) => c.turns.push(t), end: (e) => (c.end = e) };
}

function both(a: CallRecorder, b: CallRecorder): CallRecorder {
  return {
    start: (i) => (a.start(i), b.start(i)),
    turn: (t) => (a.turn(t), b.turn(t)),
    agentMessage: (m) => (a.agentMessage?.(m), b.agentMessage?.(m)),
    end: (e) => (a.end(e), b.end(e)),
  };
}
