/**
 * First-run demo (not in production): makes sure an organization API key exists, then creates and
 * publishes a demo agent on offline providers (sim ASR and LLM, the `local` Flite voice) through the public REST API, and prints
 * how to talk to it. Idempotent: a second start finds the agent and only prints.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';

// Renamed when its voice became `local` (issue 22): an install seeded before keeps its sim agent.
export const DEMO_AGENT_NAME = 'Demo agent (local voice)';
export const DEMO_WELCOME_MESSAGE = 'Hello {{name|there}}! How can I help you today?';
/** The demo's providers: real words from the offline `local` TTS; sim ASR and LLM (no keys). */
export const DEMO_PROVIDERS = { asr: 'sim', llm: 'sim', tts: 'local' } as const;

/** ORG_API_KEY, else (development only) a key generated once under DATA_DIR. */
export async function ensureDemoOrgKey(config: Config, logger: Logger): Promise<Config> {
  if (config.orgApiKey || !config.seedDemo || config.nodeEnv === 'production') return config;
  const file = path.join(config.dataDir, 'org-api.key');
  let key: string;
  try {
    key = (await fs.readFile(file, 'utf8')).trim();
  } catch {
    key = `vpk_org_${randomBytes(24).toString('base64url')}`;
    await fs.mkdir(config.dataDir, { recursive: true });
    await fs.writeFile(file, `${key}\n`, { mode: 0o600 });
    logger.warn({ file }, 'ORG_API_KEY unset: generated a development organization key under DATA_DIR');
  }
  return { ...config, orgApiKey: key, orgApiKeyGenerated: true };
}

interface Envelope<T> {
  success: boolean;
  data: T;
  error: { code: string; message: string } | null;
}

/** `hasConsole`: the control plane serves a built console (ControlPlane.consoleServed); the banner links it only then. */
export async function seedDemo(config: Config, port: number, logger: Logger, hasConsole: boolean): Promise<void> {
  if (!config.orgApiKey) return;
  const base = `http://127.0.0.1:${port}/api/v1`;
  const headers = { authorization: `Bearer ${config.orgApiKey}`, 'content-type': 'application/json' };
  const call = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
    const res = await fetch(base + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as Envelope<T>;
    if (!res.ok || !json.success) throw new Error(`${method} ${p}: ${res.status} ${json.error?.code ?? ''} ${json.error?.message ?? ''}`);
    return json.data;
  };
  try {
    const workspaces = await call<Array<{ id: string; name: string }>>('GET', '/auth/workspaces');
    const workspace = workspaces[0] ?? (await call<{ id: string }>('POST', '/auth/workspaces', { name: 'Demo' }));
    const agents = await call<Array<{ id: string; name: string }>>('GET', `/agents?workspace_id=${workspace.id}&limit=200`);
    let agent = agents.find((a) => a.name === DEMO_AGENT_NAME);
    if (!agent) {
      agent = await call<{ id: string; name: string }>('POST', '/agents', {
        workspace_id: workspace.id,
        name: DEMO_AGENT_NAME,
        description: 'Offline demo: sim ASR (type, or configure a speech provider), sim LLM (scripted), local TTS (Flite, real words).',
        system_prompt: 'You are a friendly receptionist for a small restaurant.',
        welcome_message: DEMO_WELCOME_MESSAGE,
        silence_timeout_ms: 8000,
      });
      for (const [type, name] of Object.entries(DEMO_PROVIDERS)) await call('POST', `/agents/${agent.id}/providers`, { provider_type: type, provider_name: name });
      await call('POST', `/agents/${agent.id}/versions/publish`);
      logger.info({ agentId: agent.id }, 'demo agent created and published');
    }
    const generated = config.orgApiKey.startsWith('vpk_org_') && config.nodeEnv !== 'production';
    const lines = [
      '',
      // ROLE=control-plane runs no engine here: the sessions go to the engine nodes in the registry.
      config.role === 'all' ? `Voice platform ready on ${config.publicBaseUrl} (engine ${config.enginePublicUrl}).` : `Voice platform API ready on ${config.publicBaseUrl} (engines: the nodes registered in REDIS_URL).`,
      hasConsole ? `Console: ${config.publicBaseUrl}/console` : 'Console: not built (run `npm run build`, which writes dist/console)',
      // The key rides in the fragment, which browsers never send to a server or put in a Referer.
      ...(generated && hasConsole ? [`  one-click sign-in (development key): ${consoleSignInUrl(config.publicBaseUrl, config.orgApiKey)}`] : []),
      `Demo agent "${DEMO_AGENT_NAME}": ${agent.id}`,
      `  start a session:  curl -s -X POST ${config.publicBaseUrl}/api/v1/voice/sessions/start -H 'content-type: application/json' -d '{"agent_id":"${agent.id}","dynamic_variables":{"name":"Ada"}}'`,
      '  then open the returned ws_url and stream 16 kHz PCM (see README, "Voice socket protocol").',
      `  organization API key: in ${config.orgApiKey.startsWith('vpk_org_') ? path.join(config.dataDir, 'org-api.key') : 'ORG_API_KEY'}`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
  } catch (err) {
    logger.warn({ err }, 'demo seed failed (the platform still runs)');
  }
}

/** The console URL that signs in with `key` (read from the fragment by the page, then removed from the address bar). */
export function consoleSignInUrl(publicBaseUrl: string, key: string): string {
  return `${publicBaseUrl}/console#key=${encodeURIComponent(key)}`;
}
