/**
 * The web console (issue 22): sign in with an API key, pick an agent, talk to it, read the call
 * back. Served by the control plane (`/console`); the reference browser client of
 * docs/browser-client.md. Routes: `#key=<key>` (one-click sign-in from the start banner, removed
 * from the address bar at once), `#call/<conversation id>` (a call's record).
 */
import { api, ApiError, auth, type Agent } from './api.js';
import { Call } from './call.js';
import { $, h, show } from './dom.js';
import { renderHistory, renderRecord } from './history.js';
import { addEvent, renderTurn, resetCallView, showInterim } from './view.js';

/** How long to look for the call's record after hang-up (the engine writes it asynchronously). */
const RECORD_WAIT_MS = 10_000;

const agents = new Map<string, Agent & { workspace_id: string }>();
let call: Call | undefined;

function signedOut(message = ''): void {
  auth.clear();
  show('signin');
  show('home', false);
  show('record-view', false);
  show('sign-out', false);
  $('signin-error').textContent = message;
}

async function signedIn(): Promise<void> {
  try {
    const workspaces = await api.workspaces();
    agents.clear();
    for (const w of workspaces) for (const a of await api.agents(w.id)) agents.set(a.id, { ...a, workspace_id: w.id });
  } catch (err) {
    signedOut(err instanceof ApiError && err.status === 401 ? 'That key was not accepted.' : `Sign-in failed: ${(err as Error).message}`);
    return;
  }
  show('signin', false);
  show('sign-out');
  const select = $<HTMLSelectElement>('agent');
  select.replaceChildren(...[...agents.values()].map((a) => h('option', { value: a.id }, a.name)));
  $<HTMLButtonElement>('start').disabled = agents.size === 0;
  if (agents.size === 0) $('call-state').textContent = 'No agents in your workspaces yet: create and publish one through the API.';
  route();
}

function selectedAgent(): (Agent & { workspace_id: string }) | undefined {
  return agents.get($<HTMLSelectElement>('agent').value);
}

async function refreshHistory(): Promise<void> {
  const a = selectedAgent();
  if (a) await renderHistory(a.workspace_id, a.id).catch((err: Error) => ($('history').textContent = err.message));
}

function route(): void {
  const m = /^#call\/(.+)$/.exec(location.hash);
  show('home', !m);
  show('record-view', Boolean(m));
  if (m) void renderRecord(decodeURIComponent(m[1]!));
  else void refreshHistory();
}

async function startCall(): Promise<void> {
  const agent = selectedAgent();
  if (!agent || call) return;
  resetCallView();
  show('call');
  show('call-record', false);
  show('save-audio', false);
  $<HTMLButtonElement>('start').disabled = true;
  $('call-state').textContent = 'starting…';
  try {
    call = await Call.start(
      agent.id,
      { headset: $<HTMLInputElement>('headset').checked, record: $<HTMLInputElement>('record').checked },
      {
        onEvent: addEvent,
        onInterim: showInterim,
        onTurn: renderTurn,
        onState: (s) => ($('call-state').textContent = s),
        onSpeaking: (on) => show('speaking', on),
        onEnded: (reason) => void ended(reason),
      },
    );
    for (const id of ['mute', 'hangup', 'say-send']) $<HTMLButtonElement>(id).disabled = false;
  } catch (err) {
    $('call-state').textContent = `Could not start: ${(err as Error).message}`;
    $<HTMLButtonElement>('start').disabled = false;
    call = undefined;
  }
}

async function ended(reason: string): Promise<void> {
  const c = call;
  if (!c) return;
  call = undefined;
  $('call-state').textContent = `ended: ${reason}`;
  for (const id of ['mute', 'hangup', 'say-send']) $<HTMLButtonElement>(id).disabled = true;
  $<HTMLButtonElement>('start').disabled = false;
  $('mute').textContent = 'Mute';
  if ($<HTMLInputElement>('record').checked) {
    const a = $<HTMLAnchorElement>('save-audio');
    if (a.href.startsWith('blob:')) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(c.recording());
    show('save-audio');
  }
  // The record is written asynchronously: poll briefly for it.
  const until = performance.now() + RECORD_WAIT_MS;
  for (let wait = 200; performance.now() < until; wait = Math.min(wait * 2, 2000)) {
    try {
      const conv = await api.bySession(c.sessionId);
      const link = $<HTMLAnchorElement>('call-record');
      link.href = `#call/${encodeURIComponent(conv.id)}`;
      show('call-record');
      break;
    } catch {
      await new Promise((r) => setTimeout(r, wait));
    }
  }
  await refreshHistory();
}

function boot(): void {
  const m = /^#key=(.+)$/.exec(location.hash);
  if (m) {
    try {
      auth.set(decodeURIComponent(m[1]!));
    } catch {
      // A mangled link: sign in by hand.
    }
    // The key must not stay in the address bar, the history or a bookmark.
    history.replaceState(null, '', location.pathname);
  }
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    auth.set($<HTMLInputElement>('api-key').value.trim());
    $<HTMLInputElement>('api-key').value = '';
    void signedIn();
  });
  $('sign-out').addEventListener('click', () => signedOut());
  $('start').addEventListener('click', () => void startCall());
  $('agent').addEventListener('change', () => void refreshHistory());
  $('hangup').addEventListener('click', () => call?.hangUp());
  $('mute').addEventListener('click', () => {
    if (!call) return;
    const muted = $('mute').textContent === 'Mute';
    call.setMuted(muted);
    $('mute').textContent = muted ? 'Unmute' : 'Mute';
  });
  $('say-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $<HTMLInputElement>('say');
    const text = input.value.trim();
    if (!text || !call) return;
    call.sendText(text);
    input.value = '';
  });
  window.addEventListener('hashchange', () => auth.key && route());
  if (auth.key) void signedIn();
  else signedOut();
}

boot();
