/**
 * The same contract suites the real adapters pass against their fakes, run against the sim
 * providers: sim and real must be interchangeable behind the interfaces.
 */
import { createSimAsr } from '../../../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../../../shared/providers/llm/sim.js';
import { createSimTts } from '../../../../shared/providers/tts/sim.js';
import { describeAsrContract } from '../../../contracts/asr.contract.js';
import { describeLlmContract } from '../../../contracts/llm.contract.js';
import { describeTtsContract } from '../../../contracts/tts.contract.js';

const LONG = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

describeAsrContract('sim asr (16 kHz linear16)', () => ({ provider: createSimAsr(), sampleRateHz: 16000, encoding: 'linear16', phrase: 'Book a table' }));
describeAsrContract('sim asr (8 kHz mulaw)', () => ({ provider: createSimAsr(), sampleRateHz: 8000, encoding: 'mulaw', phrase: 'Book a table' }));

describeTtsContract('sim tts', () => ({ provider: createSimTts(), text: 'good evening', longText: LONG, preferredSampleRateHz: 8000, simCoded: true }));

describeLlmContract('sim llm', () => ({
  provider: createSimLlm({
    tokensPerSecond: 200,
    script: {
      rules: [
        { when: 'weather', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
        { when: 'long', reply: LONG },
        { when: 'hello', reply: 'Hi there, how can I help?' },
      ],
    },
  }),
  textPrompt: 'hello',
  expectText: 'how can I help',
  toolPrompt: 'weather please',
  tools: [{ name: 'get_weather', description: 'Weather', parameters: { type: 'object' } }],
  longPrompt: 'something long',
}));
