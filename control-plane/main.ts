/**
 * The control plane alone (`ROLE=control-plane`): REST, Connect and gRPC on HTTP_PORT, no media
 * engine, and uWebSockets.js is never loaded (nothing here imports `media-engine/`; checked by
 * test/unit/architecture/entry-modules.test.ts). Control plane and engine in one process
 * (`ROLE=all`, what `npm start` runs) is the top-level `main.ts`; the engine alone is
 * `media-engine/main.ts`.
 */
import { ConfigError } from '../shared/config.js';
import { runMain } from '../shared/run-main.js';
import { runControlPlane } from './run.js';

runMain(
  {
    name: 'voiceplane',
    check: (config) => {
      // Refused rather than quietly serving the API without the engine ROLE=all promises.
      if (config.role !== 'control-plane') throw new ConfigError('ROLE', 'must be control-plane for dist/control-plane/main.js (ROLE=all: node dist/main.js, or npm start)');
    },
  },
  (ctx) => runControlPlane(ctx),
);
