/**
 * `control-plane/main.ts` with test tuning: the same start-up and shutdown (`runMain`,
 * `runControlPlane`: SIGTERM marks `/ready` 503, lets requests and jobs finish, exits 0), with the
 * control plane's options (job polling, dialer timings, the campaign callback base) taken as JSON
 * from CHILD_OPTIONS, so a suite that restarts control planes mid-campaign runs in seconds.
 * Everything else is configured by environment like production (test/helpers/engine-child.ts).
 */
import { runMain } from '../../shared/run-main.js';
import { runControlPlane } from '../../control-plane/run.js';

runMain({ name: 'voiceplane' }, (ctx) => runControlPlane(ctx, undefined, JSON.parse(process.env.CHILD_OPTIONS ?? '{}')));
