/**
 * The web console in real Chromium (issue 22): the control plane serves the page, a media engine
 * runs the demo `sim` agent, and Chromium's fake microphone plays a WAV of `sim`-coded phrases.
 * Signs in with the start banner's one-click link, starts a session, speaks, sees transcript and
 * reply, hears the reply (recorded by the page, decoded here), barges in on a long answer, types a
 * message, hangs up and opens the call's record with its per-turn audio. Screenshots go to
 * test-artifacts/. Needs Debian's `chromium` (.ci/run installs it): skipped without it, except
 * under CI, where a missing browser fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { realClock } from '../../shared/clock.js';
import { createRedisTranscriptBus, type TranscriptBus } from '../../shared/records/bus.js';
import { startEngineRecords, type EngineRecords } from '../../media-engine/records/index.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { consoleSignInUrl, DEMO_WELCOME_MESSAGE, seedDemo } from '../../control-plane/seed.js';
import { startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { decodeSimWav, writeFakeMicWav } from '../helpers/fake-mic.js';
// @ts-expect-error plain ESM build script without types
import { buildConsole } from '../../console/build.mjs';
import { freePort } from '../helpers/free-port.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium && process.env.CI) throw new Error(`${CHROMIUM} is missing: CI must run the browser test (.ci/run installs chromium)`);
const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts');

/** What the fake microphone says, from the moment the page opens it (after the greeting). */
const SCRIPT = [
  // The greeting (~2.5 s of speech) has played out by then, with room for a slow start.
  { atMs: 6000, text: 'hello' },
  { atMs: 10000, text: 'the long version please' },
  // Lands inside the long answer (about 30 s of speech): a barge-in.
  { atMs: 15500, text: 'stop' },
];

let infra: TestInfra;
let bus: TranscriptBus;
let records: EngineRecords;
let engine: EngineNode;
let cp: ControlPlane;
let browser: Browser;
const SIM_AGENT = 'Console test agent (sim)';
let tmp: string;
let base = '';
const key = `vpk_org_${randomBytes(24).toString('base64url')}`;

/** Creates and publishes an agent on the `sim` providers through the REST API with the org key. */
async function createSimAgent(port: number, name: string): Promise<void> {
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as { success: boolean; data: any };
    if (!res.ok || !json.success) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const [workspace] = await call('GET', '/auth/workspaces');
  const agent = await call('POST', '/agents', { workspace_id: workspace.id, name, system_prompt: 'You are a friendly receptionist.', welcome_message: DEMO_WELCOME_MESSAGE, silence_timeout_ms: 8000 });
  for (const type of ['asr', 'llm', 'tts']) await call('POST', `/agents/${agent.id}/providers`, { provider_type: type, provider_name: 'sim' });
  await call('POST', `/agents/${agent.id}/versions/publish`);
}

describe.skipIf(!haveChromium)('web console in Chromium', () => {
  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vp-console-'));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    infra = await startTestInfra({ httpPort: port, seedDemo: true }, { ORG_API_KEY: key, PUBLIC_BASE_URL: base });
    const { config, sql, logger } = infra;
    bus = await createRedisTranscriptBus({ url: TEST_REDIS_URL, prefix: infra.registryPrefix });
    records = await startEngineRecords({ config, sql, logger, clock: realClock, bus });
    engine = await startEngineNode({ config, logger, clock: realClock, registry: infra.registry, recorderFactory: records.writer.recorderFor, recordsQueued: records.writer.queued, sql, secrets: infra.secrets });
    const consoleDir = path.join(tmp, 'console');
    await buildConsole(consoleDir);
    cp = await startControlPlane(infra, { port, bus, consoleDir });
    // The start banner as `npm start` prints it (the console URL and the one-click sign-in link),
    // with the demo agent it seeds.
    let banner = '';
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => ((banner += String(chunk)), write(chunk, ...rest))) as typeof process.stdout.write;
    try {
      await seedDemo(config, cp.port, logger, cp.consoleServed);
    } finally {
      process.stdout.write = write;
    }
    expect(banner).toContain(`Console: ${base}/console\n`);
    expect(banner).toContain(consoleSignInUrl(base, key));
    // The agent the browser talks to: all `sim` (the demo agent speaks real words with the local
    // TTS, which the test's sim decoder cannot read back), with the demo's scripted sim LLM.
    await createSimAgent(cp.port, SIM_AGENT);
    const wav = path.join(tmp, 'mic.wav');
    writeFakeMicWav(wav, SCRIPT, 21_000);
    // Not persistent: Playwright gives the browser a fresh temporary profile of its own.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--use-fake-ui-for-media-stream',
        '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${wav}%noloop`,
        '--autoplay-policy=no-user-gesture-required',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await cp?.close();
    await engine?.close();
    await records?.close();
    await bus?.close();
    await infra?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('refuses a wrong key with a message and keeps it out of the page', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${base}/console`);
      await page.fill('#api-key', 'vpk_org_wrong-key-wrong-key-wrong');
      await page.click('#signin-form button');
      await page.locator('#signin-error', { hasText: 'not accepted' }).waitFor();
      expect(await page.isVisible('#home')).toBe(false);
      expect(await page.evaluate(() => (globalThis as unknown as { sessionStorage: { length: number } }).sessionStorage.length)).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('says why a session cannot start (an agent never published: 409) and stays usable', async () => {
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${base}/api/v1${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return ((await res.json()) as { data: any }).data;
    };
    const [ws] = (await call('GET', '/auth/workspaces')) as Array<{ id: string }>;
    const draft = (await call('POST', '/agents', { workspace_id: ws!.id, name: 'Draft only' })) as { id: string };
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(consoleSignInUrl(base, key));
      await page.locator('#home').waitFor({ state: 'visible' });
      await page.selectOption('#agent', draft.id);
      await page.click('#start');
      await page.locator('#call-state', { hasText: 'Could not start' }).waitFor();
      expect(await page.isEnabled('#start')).toBe(true);
      expect(await page.isVisible('#hangup')).toBe(true);
      expect(await page.isEnabled('#hangup')).toBe(false);
    } finally {
      await context.close();
    }
  });

  async function shot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(ARTIFACTS, `console-${name}.png`), fullPage: true });
  }

  it('signs in, talks, hears, barges in, types, hangs up, plays the record', { timeout: 120_000 }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    // Records what the page sends on the voice socket (message kinds and frame sizes).
    await context.addInitScript(() => {
      const sent: string[] = [];
      (globalThis as unknown as { __sent: string[] }).__sent = sent;
      const send = WebSocket.prototype.send;
      WebSocket.prototype.send = function (this: WebSocket, d: string | ArrayBufferLike | Blob | ArrayBufferView) {
        sent.push(typeof d === 'string' ? (JSON.parse(d) as { type: string }).type : `binary:${(d as ArrayBuffer).byteLength}`);
        return send.call(this, d);
      };
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      // The page polls for the call's record after hang-up: 404 until the engine has written it.
      if (m.location().url.includes('/conversations/by-session/')) return;
      if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    try {
      // One-click sign-in: the key travels in the fragment and is removed from the address bar.
      await page.goto(consoleSignInUrl(base, key));
      await page.locator('#home').waitFor({ state: 'visible' });
      expect(page.url()).toBe(`${base}/console`);
      await expect.poll(() => page.locator('#agent option').allTextContents()).toContain(SIM_AGENT);
      await shot(page, '1-signed-in');

      await page.selectOption('#agent', { label: SIM_AGENT });
      await page.check('#headset');
      await page.check('#record');
      await page.click('#start');
      await page.locator('#call-state', { hasText: 'live' }).waitFor({ timeout: 15_000 });

      // Spoken "hello": transcript, reply, and the page's own end of speech -> heard time.
      const user = page.locator('#transcript .user');
      const agent = page.locator('#transcript .agent');
      await user.filter({ hasText: 'hello' }).first().waitFor({ timeout: 20_000 });
      await agent.filter({ hasText: 'You said: hello.' }).first().waitFor({ timeout: 10_000 });
      const heard = page.locator('#waterfall .turn-row .heard[data-heard-ms]:not([data-heard-ms=""])').first();
      await heard.waitFor({ timeout: 10_000 });
      const heardMs = Number(await heard.getAttribute('data-heard-ms'));
      expect(heardMs).toBeGreaterThan(0);
      expect(heardMs).toBeLessThan(1500);

      // The long answer, cut by "stop": marked interrupted, and the reply to "stop" follows.
      await agent.filter({ hasText: 'here is the long version' }).first().waitFor({ timeout: 20_000 });
      await page.locator('#transcript .agent.interrupted').first().waitFor({ timeout: 20_000 });
      await user.filter({ hasText: 'stop' }).first().waitFor({ timeout: 10_000 });
      await agent.filter({ hasText: 'You said: stop.' }).first().waitFor({ timeout: 10_000 });
      const interrupted = await page.locator('#transcript .agent.interrupted').first().textContent();
      expect(interrupted).toContain('long version');
      await expect.poll(() => page.locator('#timeline li[data-type="interim_transcription"]').count()).toBeGreaterThan(0);
      await shot(page, '2-barge-in');
      // Typing while the agent speaks would interrupt it too: wait for the reply to play out.
      await page.locator('#speaking').waitFor({ state: 'hidden', timeout: 10_000 });

      // Type-to-speak.
      await page.fill('#say', 'thanks for the help');
      await page.click('#say-send');
      await page.locator('#transcript .user', { hasText: 'thanks for the help' }).waitFor({ timeout: 10_000 });
      await agent.filter({ hasText: 'You said: thanks for the help.' }).first().waitFor({ timeout: 10_000 });
      // The typed turn's latency is measured from the moment it was sent; its reply plays out.
      await page.locator('#waterfall .turn-row[data-turn="4"] .heard:not([data-heard-ms=""])').waitFor({ timeout: 10_000 });
      await page.locator('#speaking').waitFor({ state: 'hidden', timeout: 10_000 });
      await shot(page, '3-typed');

      // Per turn, as the waterfall shows it: the page's heard time and the server's total.
      const turns = await page.locator('#waterfall .turn-row').evaluateAll((rows) =>
        rows.map((r) => ({ turn: r.getAttribute('data-turn'), heard_ms: r.querySelector('.heard')?.getAttribute('data-heard-ms'), head: r.querySelector('.turn-head')?.textContent, legend: r.querySelector('.legend')?.textContent })),
      );
      // 20 ms frames of 16 kHz 16-bit PCM only; playback_done after each played reply; the typed text.
      const sent = await page.evaluate(() => (globalThis as unknown as { __sent: string[] }).__sent);
      const kinds = new Set(sent);
      expect([...kinds].filter((k) => k.startsWith('binary:'))).toEqual(['binary:640']);
      expect(sent.filter((k) => k === 'binary:640').length).toBeGreaterThan(500);
      expect(sent.filter((k) => k === 'playback_done').length).toBeGreaterThanOrEqual(3);
      expect(sent.filter((k) => k === 'text_inject')).toHaveLength(1);
      await page.click('#hangup');
      await page.locator('#call-state', { hasText: 'ended' }).waitFor();

      // What the page played, recorded after the gain (ducking) stage, decoded here.
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save-audio')]);
      const recorded = fs.readFileSync(await download.path());
      fs.writeFileSync(path.join(ARTIFACTS, 'console-heard.wav'), recorded);
      const heardPhrases = decodeSimWav(recorded);
      expect(heardPhrases).toContain('hello there! how can i help you today?');
      expect(heardPhrases).toContain('you said: hello.');
      expect(heardPhrases).toContain('you said: thanks for the help.');
      // The long answer was cut: never heard whole.
      expect(heardPhrases.some((p) => p.includes('anything else you would like to know'))).toBe(false);

      // The call's record, with per-turn audio from the signed links, playable under the page's CSP.
      await page.locator('#call-record').waitFor({ state: 'visible', timeout: 15_000 });
      // The agent's history lists the call, linking to the same record.
      const conversationId = (await page.getAttribute('#call-record', 'href'))!.replace('#call/', '');
      await page.locator(`#history li[data-conversation="${conversationId}"] a`).waitFor({ timeout: 10_000 });
      await page.click('#call-record');
      await page.locator('#record-messages li').first().waitFor();
      await expect.poll(() => page.locator('#record-messages audio').count(), { timeout: 15_000 }).toBeGreaterThan(0);
      type Audio = { duration: number; onloadedmetadata: (() => void) | null; onerror: (() => void) | null; load(): void };
      const duration = await page.locator('#record-messages audio').first().evaluate(
        (a: Audio) =>
          new Promise<number>((resolve) => {
            a.onloadedmetadata = () => resolve(a.duration);
            a.onerror = () => resolve(-1);
            a.load();
          }),
      );
      expect(duration).toBeGreaterThan(0);
      await shot(page, '4-record');
      fs.writeFileSync(path.join(ARTIFACTS, 'console-latency.json'), JSON.stringify({ first_turn_end_of_speech_to_heard_ms: heardMs, turns }, null, 1));
      expect(problems).toEqual([]);
    } finally {
      await shot(page, 'last').catch(() => {});
      await context.close();
    }
  });
});
