/**
 * The node's command channel: text, say, end, amd and prewarm for a session this node owns, routed here
 * through the registry by whichever control plane received the request. The answer (or the thrown
 * error's code) goes back to that control plane and becomes the REST/RPC reply.
 */
import { AppError } from '../shared/errors.js';
import type { NodeCommand } from '../shared/registry/index.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import { atCapacity, type EngineContext } from './engine-context.js';
import { createProviders } from '../shared/providers/registry.js';
import type { AmdVerdict } from '../shared/voice/amd.js';

const AMD_VERDICTS: readonly AmdVerdict[] = ['human', 'machine', 'unknown'];

export async function handleCommand(ctx: EngineContext, cmd: NodeCommand): Promise<unknown> {
  const { clock, registry, calls, prewarmed, outbound, opts } = ctx;
  const sessionId = cmd.sessionId ?? '';
  const actor = calls.get(sessionId);
  if (cmd.kind === 'text') {
    if (!actor) throw new AppError('NOT_FOUND', 'session not found');
    const p = (cmd.payload ?? {}) as { text?: string; role?: string };
    // The actor decides at once (rate limit, max_turns, length) so the REST caller gets the answer.
    const verdict = actor.injectText(String(p.text ?? ''), p.role === 'system' ? 'system' : 'user');
    if (!verdict.ok) {
      const retryAfterS = verdict.code === 'RATE_LIMITED' ? Math.max(1, Math.ceil((verdict.retryAfterMs ?? 1000) / 1000)) : undefined;
      throw new AppError(verdict.code, verdict.message, retryAfterS ? { retryAfterS } : undefined);
    }
    return { status: 'injected' };
  }
  if (cmd.kind === 'end') {
    // A transfer hands the caller to a human, a carrier's final status (the callee hung up, its
    // callback ahead of the stream's stop) ends the call: each with its reason on the record.
    const asked = (cmd.payload as { reason?: unknown } | undefined)?.reason;
    const reason = asked === 'transferred' || asked === 'carrier_ended' ? asked : 'ended_by_api';
    if (actor) actor.endCall(reason);
    else {
      // Never connected (its call ended first): what was pre-warmed for it goes now, not when the
      // connect window closes (it counted as load and held a drain until then).
      prewarmed.discard(sessionId);
      await registry.sessions.deleteSession(sessionId);
    }
    return { status: 'ended' };
  }
  if (cmd.kind === 'say') {
    // Fixed words for the caller (no LLM): the hand-off fallback when no person is free (issue 21).
    if (!actor) throw new AppError('NOT_FOUND', 'session not found');
    const text = String((cmd.payload as { text?: unknown } | undefined)?.text ?? '').slice(0, 1000);
    if (!text.trim()) throw new AppError('INVALID_REQUEST', 'text is required');
    return { status: actor.say(text) ? 'speaking' : 'ending' };
  }
  if (cmd.kind === 'amd') {
    if (!actor) throw new AppError('NOT_FOUND', 'session not found');
    const verdict = (cmd.payload as { verdict?: unknown } | undefined)?.verdict;
    if (!AMD_VERDICTS.includes(verdict as AmdVerdict)) throw new AppError('INVALID_REQUEST', 'verdict must be human, machine or unknown');
    actor.post({ kind: 'amd_verdict', verdict: verdict as AmdVerdict });
    return { status: 'applied' };
  }
  if (cmd.kind === 'prewarm') {
    const session = await registry.sessions.getSession(sessionId);
    if (!session || prewarmed.has(sessionId) || prewarmed.hasStarted(sessionId) || calls.has(sessionId) || opts.providerFactory) return { status: 'skipped' };
    // A full node warms nothing: the socket will be refused anyway (or placed elsewhere next time).
    if (atCapacity(ctx, sessionId)) return { status: 'at_capacity' };
    const sc = session.config as SessionConfig;
    const providers = createProviders(sc.providers, { clock, language: sc.language, outbound });
    await prewarmed.warm(sessionId, providers);
    return { status: 'warm' };
  }
  throw new AppError('INVALID_REQUEST', `unknown command ${cmd.kind}`);
}
