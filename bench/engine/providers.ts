/**
 * Providers the engine host runs with. Two modes:
 *
 * - `sim`: the sim providers exactly as shipped. Their own DSP runs in the engine process: the sim
 *   ASR decodes every inbound frame with 14 Goertzel filters (~20-30 us per frame, silence too) and
 *   the sim TTS renders a whole sentence's tones at once and hands all its chunks over in one
 *   microtask burst (a 30 s answer blocks the loop for tens of ms). Neither is engine work: a
 *   vendor ASR costs one socket write per frame, and vendor TTS audio arrives chunk by chunk.
 * - `sim-net` (default for capacity): the same sim providers with those two artefacts removed, the
 *   way a network vendor would behave: the ASR is not fed frames that are digital silence (the
 *   sim code never contains a silent 20 ms frame, so recognition is unchanged), and TTS audio is
 *   rendered once per phrase (cached) and delivered one 40 ms chunk per macrotask, as socket reads
 *   would deliver it.
 *
 * Latencies (TTFT, TTFB, ASR delay) apply in both modes; 0 = answer at once.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm, simDemoScript } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { encodeText } from '../../shared/providers/sim/codec.js';
import type { AsrProvider, AsrStream, LlmProvider, PcmChunk, TtsProvider, TtsRequest } from '../../shared/providers/types.js';

export type ProviderMode = 'sim' | 'sim-net';

export interface ProviderLatencies {
  llmTtftMs: number;
  llmTokensPerSecond: number;
  ttsTtfbMs: number;
  asrLatencyMs: number;
}

export function benchProviders(mode: ProviderMode, l: ProviderLatencies): { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider } {
  const asr = createSimAsr({ latencyMs: l.asrLatencyMs });
  const llm = createSimLlm({ ttftMs: l.llmTtftMs, tokensPerSecond: l.llmTokensPerSecond, script: simDemoScript });
  if (mode === 'sim') return { asr, llm, tts: createSimTts({ ttfbMs: l.ttsTtfbMs }) };
  return { asr: silenceGatedAsr(asr), llm, tts: networkLikeTts(l.ttsTtfbMs) };
}

/**
 * True for a frame of digital silence (PCM zeros, or mu-law 0xFF / 0x7F, or 0xFE / 0x7E: A-law's
 * idle code 0xD5 / 0x55 is +-8, not zero, and arrives here transcoded to mu-law on PCMA calls).
 */
function isDigitalSilence(frame: Int16Array | Uint8Array): boolean {
  if (frame instanceof Int16Array) {
    for (let i = 0; i < frame.length; i++) if (frame[i] !== 0) return false;
    return true;
  }
  for (let i = 0; i < frame.length; i++) {
    const b = frame[i]!;
    if (b !== 0xff && b !== 0x7f && b !== 0xfe && b !== 0x7e) return false;
  }
  return true;
}

function silenceGatedAsr(inner: AsrProvider): AsrProvider {
  return {
    label: inner.label,
    capabilities: inner.capabilities,
    stream(opts): AsrStream {
      const s = inner.stream(opts);
      return {
        push: (frame) => {
          if (!isDigitalSilence(frame)) s.push(frame);
        },
        flush: () => s.flush(),
        end: () => s.end(),
        close: () => s.close(),
        [Symbol.asyncIterator]: () => s[Symbol.asyncIterator](),
      };
    },
  };
}

const CHUNK_MS = 40;

/** Rendered phrases, shared by every call of the process (the script repeats a handful of answers). */
const ttsCache = new Map<string, PcmChunk[]>();

function networkLikeTts(ttfbMs: number): TtsProvider {
  const cache = ttsCache;
  const render = (text: string, rateHz: 8000 | 16000 | 24000): PcmChunk[] => {
    const key = `${rateHz}:${text}`;
    let chunks = cache.get(key);
    if (!chunks) {
      const pcm = encodeText(text, rateHz);
      const size = (rateHz * CHUNK_MS) / 1000;
      chunks = [];
      for (let i = 0; i < pcm.length; i += size) chunks.push({ samples: pcm.subarray(i, Math.min(i + size, pcm.length)), sampleRateHz: rateHz });
      cache.set(key, chunks);
    }
    return chunks;
  };
  async function* synthesize(req: TtsRequest): AsyncGenerator<PcmChunk> {
    const rate = ([8000, 16000, 24000] as const).find((r) => r === req.preferredSampleRateHz) ?? 16000;
    if (ttfbMs > 0) await new Promise((r) => setTimeout(r, ttfbMs));
    for (const chunk of render(req.text, rate)) {
      if (req.signal.aborted) throw new DOMException('aborted', 'AbortError');
      yield chunk;
      // The next chunk comes with the next socket read, not in this microtask burst.
      await nextMacrotask();
    }
  }
  return { label: 'sim', capabilities: { streaming: true, sampleRatesHz: [8000, 16000, 24000] }, synthesize };
}
