/**
 * The Deepgram fake (test/fakes/deepgram.ts, wire-faithful) in its own process for asr-feed.ts,
 * so the vendor side's CPU is not charged to the process under test.
 *
 *   forked by bench/asr-feed.ts; never run by hand.
 */
import { DeepgramFake } from '../../test/fakes/deepgram.js';
import { serveParent } from '../lib/child.js';

const fake = new DeepgramFake({ idleTimeoutMs: 60_000 });
const { url } = await fake.start();

serveParent(
  {
    info: () => ({ url, apiKey: fake.apiKey }),
    /** Sockets accepted (101), binary messages and bytes received so far, over all connections. */
    counts: () => {
      let accepted = 0;
      let messages = 0;
      let bytes = 0;
      for (const c of fake.connections) {
        if (c.status === 101) accepted++;
        messages += c.binaryFrames;
        bytes += c.binaryBytes;
      }
      return { accepted, messages, bytes };
    },
  },
  () => fake.close(),
);
