/**
 * Where a bench child's garbage comes from: V8's sampling heap profiler with the objects that
 * either GC collected kept in the profile (a plain `--heap-prof` keeps only what is still alive at
 * the end, which hides garbage). Loaded into the child with `--import`:
 *
 *   ALLOC_SAMPLE_AT_S=14 ALLOC_SAMPLE_FOR_S=8 ALLOC_SAMPLE_OUT=/tmp/engine.heapprofile \
 *     node dist-bench/bench/engine.js --drivers twilio-lite --calls 400 --window 12 --no-append \
 *     --engine-flags=--import=./dist-bench/bench/engine/alloc-sampler.js
 *   node dist-bench/bench/alloc-summary.js /tmp/engine.heapprofile [--top 30]
 *
 * It starts sampling `ALLOC_SAMPLE_AT_S` seconds after the child starts (pick the active phase:
 * connect + idle come first) for `ALLOC_SAMPLE_FOR_S` seconds, one sample per 16 kB allocated.
 * `ALLOC_SAMPLE_PROMOTED=1` keeps only what outlived the young generation (promoted to old space,
 * then collected by a full GC or still alive): where old-space growth and costly scavenges come
 * from (it found the REST server's in-flight `Set`, control-plane/http/in-flight.ts).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const atS = Number(process.env.ALLOC_SAMPLE_AT_S ?? 14);
const forS = Number(process.env.ALLOC_SAMPLE_FOR_S ?? 8);
const out = process.env.ALLOC_SAMPLE_OUT ?? `alloc-${process.pid}.heapprofile`;

const session = new Session();
session.connect();
session.post('HeapProfiler.enable');
setTimeout(() => {
  const params = { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.ALLOC_SAMPLE_PROMOTED !== '1' };
  session.post('HeapProfiler.startSampling', params, (err) => {
    if (err) return console.error(`alloc-sampler: ${err.message}`);
    setTimeout(() => {
      session.post('HeapProfiler.stopSampling', (stopErr, result) => {
        if (stopErr) return console.error(`alloc-sampler: ${stopErr.message}`);
        writeFileSync(out, JSON.stringify(result.profile));
        console.error(`alloc-sampler: ${forS} s of allocations written to ${out}`);
      });
    }, forS * 1000).unref();
  });
}, atS * 1000).unref();
