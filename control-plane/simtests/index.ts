/**
 * The simulation tests domain (issue 20; spec doc 1 "Test case", "Test run", "Test result",
 * "Simulation tests", the test-run stream in "Events", versioning rule 3). Public contract and
 * design: docs/simulation-tests.md; notes: NOTES.md.
 */
import { SimTestService } from '../../shared/gen/voiceplane/v1/simtests_pb.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import type { PublishGate } from '../agents/deps.js';
import { createAccess } from '../agents/access.js';
import { RunChanges } from './changes.js';
import { createPublishGate, type GateOptions } from './gate.js';
import { simTestRoutes } from './routes.js';
import { createRunCreator } from './runs.js';
import { startRunner, type LlmFactory, type RunnerOptions } from './runner.js';
import { createSimTestService } from './service.js';
import { createRunStream } from './stream.js';

export type SimTestsDeps = Pick<ControlPlaneDeps, 'sql' | 'logger' | 'clock' | 'secrets'> & {
  auth: Auth;
  jobs: Jobs;
  outbound: OutboundClient;
  llmFor: LlmFactory;
  runner?: RunnerOptions;
  gate?: GateOptions;
  /** Progress stream poll interval. Default 2000 ms (the spec's). */
  streamPollMs?: number;
  /** Open test-run streams per user (default 20). */
  streamMaxPerUser?: number;
};

export interface SimTestsDomain extends Domain {
  /** Handed to the agents domain: runs the `gate` cases before a publish. */
  publishGate: PublishGate;
  readonly openStreams: number;
}

export async function createSimTestsDomain(deps: SimTestsDeps): Promise<SimTestsDomain> {
  const { sql, logger, clock } = deps;
  const changes = new RunChanges();
  const runner = await startRunner({ ...deps, options: deps.runner, onChange: (id) => changes.emit(id) });
  const runs = createRunCreator({ sql, secrets: deps.secrets, clock, runner });
  const access = createAccess({ sql, auth: deps.auth });
  const impl = createSimTestService({ sql, access, runs, onChange: (id) => changes.emit(id) });
  const stream = createRunStream({
    sql,
    clock,
    logger,
    changes,
    pollMs: deps.streamPollMs,
    maxStreamsPerUser: deps.streamMaxPerUser,
    principalId: async (ctx) => (await deps.auth.principal(ctx)).userId,
    getRun: async (runId, ctx) => impl.getTestRun({ runId } as never, ctx),
  });
  return {
    services: [{ service: SimTestService, impl }] as ServiceBinding[],
    routes: simTestRoutes,
    rawHandlers: [stream.handler],
    publishGate: createPublishGate({ sql, clock, logger, runs, options: deps.gate }),
    get openStreams() {
      return stream.openStreams;
    },
    async close() {
      stream.closeAll();
    },
  };
}
