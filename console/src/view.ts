/** The live call's panels: transcript, event timeline and the per-turn latency waterfall. */
import { h, $, ms } from './dom.js';
import type { ServerEvent, Turn } from './call.js';

/** Timeline entries kept on screen (older ones are dropped: a long call stays light). */
const MAX_TIMELINE = 300;
/** Events too frequent to list one by one. */
const QUIET = new Set(['llm_chunk']);

export function resetCallView(): void {
  for (const id of ['transcript', 'timeline', 'waterfall']) $(id).replaceChildren();
  $('interim').textContent = '';
}

export function addEvent(ev: ServerEvent, atMs: number): void {
  if (QUIET.has(ev.type)) return;
  const list = $('timeline');
  const detail = ev.text !== undefined ? ` "${String(ev.text).slice(0, 60)}"` : ev.reason !== undefined ? ` ${String(ev.reason)}` : ev.message !== undefined ? ` ${String(ev.message)}` : '';
  const turn = ev.turn !== undefined ? ` #${ev.turn}` : '';
  list.append(h('li', { 'data-type': ev.type }, h('time', {}, `${(atMs / 1000).toFixed(2)}s`), ` ${ev.type}${turn}${detail}`));
  while (list.childElementCount > MAX_TIMELINE) list.firstElementChild?.remove();
  list.scrollTop = list.scrollHeight;
}

export function showInterim(text: string): void {
  $('interim').textContent = text ? `… ${text}` : '';
}

/** Renders (or re-renders) one turn's transcript lines and its waterfall row. */
export function renderTurn(t: Turn): void {
  const transcript = $('transcript');
  const lines = [
    t.user ? h('li', { class: 'user', 'data-turn': String(t.turn) }, h('b', {}, t.source === 'text' ? 'You (typed): ' : 'You: '), t.user) : undefined,
    t.assistant
      ? h('li', { class: `agent${t.interrupted ? ' interrupted' : ''}`, 'data-turn': String(t.turn) }, h('b', {}, 'Agent: '), t.assistant, t.interrupted ? h('em', {}, ' (interrupted)') : '')
      : undefined,
  ].filter((x): x is HTMLLIElement => x !== undefined);
  const existing = transcript.querySelector(`[data-group="${t.turn}"]`);
  const group = h('div', { 'data-group': String(t.turn) }, ...lines);
  if (existing) existing.replaceWith(group);
  else transcript.append(group);
  transcript.scrollTop = transcript.scrollHeight;
  if (t.timing || t.heardMs !== undefined) renderWaterfall(t);
}

/**
 * One row per turn, laid end to end: ASR final (the larger of the server's `asr_ms` and what the
 * page saw from its own end of speech to the final transcript: a server whose clock starts at the
 * final cannot report endpointing delay), LLM first token, tools, TTS first byte, internal
 * overhead, then what the page adds (network, jitter buffer, output) up to the first audio heard.
 */
function renderWaterfall(t: Turn): void {
  const box = $('waterfall');
  const tm = t.timing;
  const asr = Math.max(tm?.asr_ms ?? 0, t.finalMs ?? 0);
  const asrLabel = tm && t.finalMs !== undefined && Math.round(t.finalMs) > tm.asr_ms ? `ASR final (server ${ms(tm.asr_ms)}, page)` : 'ASR final';
  const parts: Array<[string, number, string]> = tm
    ? [
        ['asr', asr, asrLabel],
        ['llm', tm.llm_ttfb_ms, 'LLM first token'],
        ['tool', tm.tool_ms, 'tools'],
        ['tts', tm.tts_ttfb_ms, 'TTS first byte'],
        ['overhead', tm.internal_overhead_ms, 'internal overhead'],
      ]
    : [];
  const before = parts.reduce((sum, p) => sum + p[1], 0);
  if (t.heardMs !== undefined) parts.push(['client', Math.max(0, t.heardMs - before), 'network + buffer + output']);
  const total = Math.max(1, t.heardMs ?? 0, before);
  const scale = Math.max(total, 300);
  const bars = h('div', { class: 'bars' });
  for (const [cls, v, label] of parts) {
    if (!v) continue;
    const bar = h('span', { class: `bar ${cls}`, title: `${label}: ${ms(v)}` });
    // Through the CSSOM: the CSP allows no inline style attributes.
    bar.style.width = `${((100 * v) / scale).toFixed(2)}%`;
    bars.append(bar);
  }
  const legend = parts.map(([, v, label]) => `${label} ${ms(v)}`).join(' · ');
  const row = h(
    'div',
    { class: 'turn-row', 'data-turn': String(t.turn) },
    h('div', { class: 'turn-head' }, `Turn ${t.turn}`, h('span', { class: 'heard', 'data-heard-ms': t.heardMs === undefined ? '' : String(Math.round(t.heardMs)) }, ` end of speech → heard: ${ms(t.heardMs)}`), h('span', {}, ` · server: ${ms(tm?.total_ms)}`)),
    bars,
    h('div', { class: 'legend' }, legend),
  );
  const existing = box.querySelector(`.turn-row[data-turn="${t.turn}"]`);
  if (existing) existing.replaceWith(row);
  else box.append(row);
}
