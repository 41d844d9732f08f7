/**
 * A browser call that is really up: started through a control plane, connected, `pipeline_ready`,
 * and one text turn answered. Sockets opened back to back used to end within milliseconds of
 * `pipeline_ready` (a uWebSockets.js asynchronous-upgrade bug, fixed by upgrading synchronously:
 * docs/operations.md). A call that still fails before its first turn is replaced (at most
 * `tries` times) and counted, so suites that assert "no call dropped" during a restart only
 * count calls that were established, and the count shows if it comes back.
 */
import { api, type ApiResponse } from './accounts.js';
import { VoiceClient } from './voice-client.js';

export interface EstablishedCall {
  sessionId: string;
  client: VoiceClient;
  /** Port of the engine node the session was placed on. */
  port: number;
}

export const connectDrops = { count: 0 };

export async function establishedCall(cpPort: number, agentId: string, o: { tries?: number; accept?: (port: number) => boolean } = {}): Promise<EstablishedCall> {
  const tries = o.tries ?? 3;
  for (let attempt = 0; attempt < tries; attempt++) {
    const r = await api({ port: cpPort }, 'POST', '/api/v1/voice/sessions/start', { body: { agent_id: agentId } });
    if (r.status !== 200) throw new Error(`session start: ${r.status} ${JSON.stringify(r.body)}`);
    const port = Number(new URL(r.body.ws_url).port);
    if (o.accept && !o.accept(port)) continue;
    const client = await VoiceClient.connect(r.body.ws_url, { sendAudio: false });
    await client.waitForType('pipeline_ready', 15_000);
    const call = { sessionId: r.body.session_id as string, client, port };
    if (await answersTurn(call, cpPort)) return call;
    connectDrops.count++;
    client.close();
  }
  throw new Error(`no call established in ${tries} tries`);
}

/** A caller text through `cpPort`; true once the agent's reply (its LLM turn) reached the socket and the socket is still open. */
export async function answersTurn(call: EstablishedCall, cpPort: number, text = 'Hello?'): Promise<boolean> {
  if (call.client.closeCode !== undefined) return false;
  const from = call.client.events.length;
  const r = await api({ port: cpPort }, 'POST', `/api/v1/voice/sessions/${call.sessionId}/text`, { body: { text } });
  if (r.status !== 200) return false;
  await call.client.waitFor((e) => e.type === 'llm_end', 20_000, from);
  return call.client.closeCode === undefined;
}

/**
 * POST `/text` for a session through `cpPort`. A 503 (`Retry-After`: Redis restarting, the
 * engine's command subscription reconnecting) is retried the way a client does, waiting the
 * advertised seconds, at most `retries` times; `retried` counts those 503s.
 */
export async function postText(cpPort: number, sessionId: string, text: string, retries = 10): Promise<ApiResponse & { retried: number }> {
  for (let retried = 0; ; retried++) {
    const r = await api({ port: cpPort }, 'POST', `/api/v1/voice/sessions/${sessionId}/text`, { body: { text } });
    if (r.status !== 503 || retried >= retries) return { ...r, retried };
    await new Promise((resolve) => setTimeout(resolve, Number(r.headers['retry-after'] ?? 1) * 1000));
  }
}
