/**
 * An engine node on a free port with real timers and `sim` providers (ASR as shipped; LLM and
 * TTS options per suite): what most engine integration suites start in `beforeAll`.
 */
import { realClock } from '../../shared/clock.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm, type SimLlmOptions } from '../../shared/providers/llm/sim.js';
import { createSimTts, type SimTtsOptions } from '../../shared/providers/tts/sim.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import type { EngineNodeOptions } from '../../media-engine/engine-context.js';

export type SimEngineOptions = Omit<EngineNodeOptions, 'clock' | 'port'> & { llm?: SimLlmOptions; tts?: SimTtsOptions };

export function startSimEngine({ llm, tts, ...opts }: SimEngineOptions): Promise<EngineNode> {
  return startEngineNode({
    clock: realClock,
    port: 0,
    providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm(llm), tts: createSimTts(tts) }),
    ...opts,
  });
}
