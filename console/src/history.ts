/** Conversation history of the chosen agent, and one call's record with per-turn audio. */
import { api, type ConversationDetail } from './api.js';
import { h, $, ms } from './dom.js';

export async function renderHistory(workspaceId: string, agentId: string): Promise<void> {
  const list = $('history');
  const rows = await api.conversations(workspaceId, agentId);
  list.replaceChildren(
    ...rows.map((c) =>
      h(
        'li',
        { 'data-conversation': c.id },
        h('a', { href: `#call/${encodeURIComponent(c.id)}` }, new Date(c.started_at).toLocaleString()),
        ` · ${c.status} · ${c.total_turns} turns · avg ${ms(c.avg_response_latency_ms)}`,
      ),
    ),
  );
  if (rows.length === 0) list.append(h('li', {}, 'No calls yet.'));
}

/** The call record: transcript with each turn's audio (signed, short-lived links) and the raw JSON. */
export async function renderRecord(id: string): Promise<void> {
  const box = $('record-body');
  box.replaceChildren(h('p', {}, 'Loading…'));
  let d: ConversationDetail;
  try {
    d = await api.conversation(id);
  } catch (err) {
    box.replaceChildren(h('p', { class: 'error' }, `Could not load the call: ${(err as Error).message}`));
    return;
  }
  const c = d.conversation;
  const turns = h('ol', { id: 'record-messages' });
  for (const m of d.messages) {
    const li = h('li', { class: m.role === 'user' ? 'user' : 'agent', 'data-message': m.id }, h('b', {}, `#${m.turn_number} ${m.role}: `), m.content || '(no text)');
    if (m.total_latency_ms) li.append(h('span', { class: 'muted' }, ` · ${ms(m.total_latency_ms)}`));
    if (m.audio_url) {
      const audio = h('audio', { controls: '', preload: 'none', src: m.audio_url });
      li.append(h('div', {}, audio));
    }
    turns.append(li);
  }
  box.replaceChildren(
    h('h2', {}, 'Call record'),
    h('p', {}, `Conversation ${c.id} · session ${c.session_id.slice(0, 6)}… · ${c.status} · ${c.total_turns} turns · ${ms(c.total_duration_ms)}`),
    turns,
    h('details', {}, h('summary', {}, 'Raw record (GET /api/v1/conversations/' + c.id + ')'), h('pre', {}, JSON.stringify(d, null, 2))),
  );
}
