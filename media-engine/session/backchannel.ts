/**
 * Backchannels: short acknowledgements a caller makes while listening. They must not confirm a
 * barge-in (the spec's recommended handling; a common failure of peers is to stop on "uh-huh").
 */
const BACKCHANNELS = new Set([
  'uh-huh', 'uh huh', 'uhhuh', 'mhm', 'mm-hmm', 'mm hmm', 'mmhmm', 'hmm', 'mm', 'um', 'uh', 'ah', 'oh',
  'ok', 'okay', 'yeah', 'yep', 'yes', 'yup', 'right', 'sure', 'i see', 'got it', 'cool', 'alright', 'all right',
]);

/** True when the whole utterance is one or two backchannel tokens (e.g. "okay", "yeah yeah", "uh-huh."). */
export function isBackchannel(text: string): boolean {
  const norm = normalize(text);
  if (!norm) return true;
  if (BACKCHANNELS.has(norm)) return true;
  const words = norm.split(' ');
  if (words.length <= 3 && words.every((w) => BACKCHANNELS.has(w))) return true;
  return false;
}

/**
 * For partial (interim) text: true while it may still become a backchannel, i.e. every word is one
 * and the last, possibly cut-off word is the start of one ("ok" of "okay", "uh-h" of "uh-huh").
 * Streaming recognisers emit such prefixes first; confirming a barge-in on them would defeat
 * the backchannel rule.
 */
export function mayBecomeBackchannel(text: string): boolean {
  const norm = normalize(text);
  if (!norm) return true;
  if (isBackchannel(norm)) return true;
  const words = norm.split(' ');
  if (words.length > 3) return false;
  const last = words[words.length - 1];
  const tokens = [...BACKCHANNELS].flatMap((b) => b.split(' '));
  return words.slice(0, -1).every((w) => BACKCHANNELS.has(w)) && tokens.some((t) => t.startsWith(last));
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/[^a-z' -]/g, ' ').replace(/\s+/g, ' ').trim();
}

/**
 * True when recognised text looks like the agent's own voice coming back (speakerphone echo):
 * its words appear, in order, in what the agent is saying right now.
 */
export function isLikelyEcho(text: string, agentSpeech: string): boolean {
  const words = text.toLowerCase().replace(/[^a-z0-9' ]/g, ' ').split(/\s+/).filter(Boolean);
  if (words.length === 0) return false;
  const agent = ` ${agentSpeech.toLowerCase().replace(/[^a-z0-9' ]/g, ' ').replace(/\s+/g, ' ')} `;
  return agent.includes(` ${words.join(' ')}`);
}
