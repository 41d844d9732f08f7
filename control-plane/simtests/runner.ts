/**
 * The worker side of simulation tests, on the durable job queue (control-plane/jobs):
 *
 * - `simtests.run` {run_id}: claims the run (queued -> running) unless its workspace already runs
 *   `maxRunsPerWorkspace` runs (then the job re-queues itself `busyRetrySeconds` later), queues the
 *   run's watchdog, then plays its pending cases, `caseConcurrency` at a time, writing a heartbeat
 *   every `heartbeatMs`. So one workspace has at most maxRunsPerWorkspace x caseConcurrency
 *   conversations at once, whichever replicas work the queue. A heartbeat answering `cancelled`
 *   aborts the cases in flight (their LLM and tool requests included).
 * - `simtests.watchdog` {run_id}: while the run is open, checks every `staleSeconds`; a running
 *   run whose heartbeat is older than that lost its worker (process killed, machine gone) and is
 *   finished `failed`, its unfinished cases `errored`. It is a job, not a timer: it runs on
 *   whichever replica is alive, also after a crash of the one that queued it.
 *
 * A re-delivered `simtests.run` job (pg-boss expiry after a crash) finds the run no longer
 * `queued` and does nothing: a run is never silently re-played.
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { Sql } from '../../shared/db/client.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import type { ProviderSettings } from '../../shared/voice/session-config.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import { createAsrProvider, createTtsProvider } from '../../shared/providers/registry.js';
import { simulateConversation } from './conversation.js';
import type { SpeechPath } from './speech.js';
import { ProviderFailure } from './forced-call.js';
import { judge } from './judge.js';
import { buildSimTools } from './tools.js';
import { sessionConfigFor } from './tested-config.js';
import * as store from './store.js';

/** Why a run the server was playing when it shut down ended (start it again: it is not resumed). */
export const SHUTDOWN_REASON = 'the server shut down while the run was playing; start the run again';

export type LlmFactory = (settings: ProviderSettings) => LlmProvider | Promise<LlmProvider>;

export interface RunnerOptions {
  /** Runs of one workspace running at once (across replicas). Default 2. */
  maxRunsPerWorkspace?: number;
  /** Cases of one run played at once. Default 4. */
  caseConcurrency?: number;
  /** Heartbeat period of a running run. Default 5000 ms. */
  heartbeatMs?: number;
  /** A running run whose heartbeat is older is failed by the watchdog. Default 30 s. */
  staleSeconds?: number;
  /** Busy workspace: the run job is tried again this much later. Default 2 s. */
  busyRetrySeconds?: number;
  /** Per caller or judge request (the agent's own requests are bounded by the provider adapters). Default 60 000 ms. */
  requestTimeoutMs?: number;
  /** Run jobs worked at once by this process. Default 2. */
  jobConcurrency?: number;
}

export interface RunnerDeps {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  secrets: SecretBox;
  jobs: Jobs;
  outbound: OutboundClient;
  /** Builds the agent's, the simulated caller's and the judge's LLM from the tested version's LLM settings. */
  llmFor: LlmFactory;
  /** Told after every change of a run (progress streams of this process answer at once). */
  onChange?: (runId: string) => void;
  options?: RunnerOptions;
}

const MAX_ERROR_CHARS = 500;

export interface Runner {
  /** Queues the run's job (inside the caller's transaction, so the job exists iff the run does). */
  enqueue(runId: string, tx?: Sql): Promise<void>;
  readonly staleSeconds: number;
}

export async function startRunner(deps: RunnerDeps): Promise<Runner> {
  const { sql, logger, clock, jobs } = deps;
  const o = deps.options ?? {};
  const maxRuns = o.maxRunsPerWorkspace ?? 2;
  const caseConcurrency = o.caseConcurrency ?? 4;
  const heartbeatMs = o.heartbeatMs ?? 5000;
  const staleSeconds = o.staleSeconds ?? 30;
  const busyRetrySeconds = o.busyRetrySeconds ?? 2;
  const timeoutMs = o.requestTimeoutMs ?? 60_000;
  const changed = (runId: string) => deps.onChange?.(runId);

  async function runJob(job: JobContext<'simtests.run'>): Promise<void> {
    const runId = job.data.run_id;
    const run = await store.getRun(sql, runId);
    if (!run || run.status !== 'queued') return;
    const claim = await store.claimRun(sql, runId, run.workspace_id, maxRuns, staleSeconds);
    if (claim === 'busy') {
      await jobs.enqueue('simtests.run', { run_id: runId }, { singletonKey: runId, delaySeconds: busyRetrySeconds });
      return;
    }
    if (claim !== 'claimed') return;
    changed(runId);
    await jobs.enqueue('simtests.watchdog', { run_id: runId }, { singletonKey: runId, delaySeconds: staleSeconds });
    logger.info({ runId, agentId: run.agent_id, version: run.agent_version, total: run.total }, 'test run started');
    const stop = new AbortController();
    const onQueueClose = () => stop.abort(new Error('job queue closed'));
    job.signal.addEventListener('abort', onQueueClose, { once: true });
    // The queue closed while the run was being claimed: the listener above will never fire.
    if (job.signal.aborted) onQueueClose();
    const beat = startHeartbeat(runId, stop);
    try {
      await playCases(run, stop.signal);
    } catch (err) {
      if (!stop.signal.aborted) {
        logger.warn({ err, runId }, 'test run failed');
        await store.failRun(sql, runId, String((err as Error).message).slice(0, MAX_ERROR_CHARS));
        changed(runId);
      }
    } finally {
      beat.stop();
      job.signal.removeEventListener('abort', onQueueClose);
    }
    if (job.signal.aborted) {
      // A clean stop (the queue closing) ends its own run now: waiting for the watchdog left it
      // `running` until some replica ran again. A process that dies without one is the watchdog's.
      // A run whose last case finished as the stop came is complete, not failed.
      const complete = await store.completeRun(sql, runId).catch(() => undefined);
      if (complete) {
        changed(runId);
        return;
      }
      const failed = await store.failRun(sql, runId, SHUTDOWN_REASON).catch((err: unknown) => logger.warn({ err, runId }, 'test run not failed at shutdown: the watchdog will'));
      if (failed) {
        logger.info({ runId }, 'test run failed: the server shut down');
        changed(runId);
      }
      return;
    }
    const done = await store.completeRun(sql, runId);
    if (done) logger.info({ runId, passed: done.passed, failed: done.failed, errored: done.errored }, 'test run completed');
    changed(runId);
  }

  /** Heartbeats on the injected clock; a `cancelled` (or vanished) run aborts the cases in flight. */
  function startHeartbeat(runId: string, stop: AbortController): { stop(): void } {
    let timer: TimerHandle | undefined;
    let stopped = false;
    const tick = async () => {
      try {
        const status = await store.heartbeat(sql, runId);
        if (status !== 'running') stop.abort(new Error(`run ${status ?? 'deleted'}`));
      } catch (err) {
        logger.warn({ err, runId }, 'test run heartbeat not written');
      }
      if (!stopped && !stop.signal.aborted) timer = clock.setTimeout(() => void tick(), heartbeatMs);
    };
    timer = clock.setTimeout(() => void tick(), heartbeatMs);
    return {
      stop() {
        stopped = true;
        clock.clearTimeout(timer);
      },
    };
  }

  async function playCases(run: store.RunRow, signal: AbortSignal): Promise<void> {
    const snap = await store.getRunSnapshot(sql, run.id);
    if (!snap) throw new Error('the run has no snapshot');
    const config = await sessionConfigFor(sql, deps.secrets, run.agent_version, snap.snapshot, run.id, clock.now());
    const llm = await deps.llmFor(config.providers.llm);
    // Audio mode: the version's own ASR and TTS (the shared provider factory, through the outbound client).
    const speech: SpeechPath | undefined =
      run.mode === 'audio'
        ? {
            asr: createAsrProvider(config.providers.asr, { clock, outbound: deps.outbound, language: config.language }),
            tts: createTtsProvider(config.providers.tts, { clock, outbound: deps.outbound }),
            language: config.language,
            ttsVoice: config.providers.tts.voice,
            ttsModel: config.providers.tts.model_name,
          }
        : undefined;
    const pending = (await store.listResults(sql, run.id)).filter((r) => r.status === 'pending' || r.status === 'running');
    let next = 0;
    const worker = async () => {
      while (next < pending.length && !signal.aborted) {
        const result = pending[next++]!;
        await playCase(run.id, result, config, llm, speech, signal);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(caseConcurrency, pending.length) }, worker));
    } finally {
      speech?.asr.close?.();
      speech?.tts.close?.();
    }
    if (signal.aborted) throw signal.reason as Error;
  }

  async function playCase(runId: string, result: store.ResultRow, config: Awaited<ReturnType<typeof sessionConfigFor>>, llm: LlmProvider, speech: SpeechPath | undefined, signal: AbortSignal): Promise<void> {
    if (!(await store.markResultRunning(sql, result.id))) return;
    changed(runId);
    const c = result.case_snapshot;
    const started = clock.monotonicMs();
    const tools = buildSimTools(config.tools, c.mocks ?? {}, { outbound: deps.outbound, clock });
    let outcome: store.ResultOutcome;
    try {
      const conv = await simulateConversation({ config, testCase: c, agentLlm: llm, callerLlm: llm, tools, clock, callerTimeoutMs: timeoutMs, speech, signal });
      const verdict = await judge(llm, c.assertions, conv.transcript, { clock, timeoutMs, signal });
      const base = { transcript: conv.transcript, turns_taken: conv.turns, duration_ms: Math.round(clock.monotonicMs() - started), tokens_used: conv.tokens + verdict.tokens, retry_count: conv.retries + verdict.retries };
      outcome = verdict.ok
        ? { ...base, status: verdict.results.every((r) => r.passed) ? 'passed' : 'failed', assertion_results: verdict.results, error_message: null }
        : { ...base, status: 'errored', assertion_results: [], error_message: verdict.error.slice(0, MAX_ERROR_CHARS) };
    } catch (err) {
      if (signal.aborted) return;
      // Provider failures are results (`errored`); anything else is a bug, logged, and errored too.
      if (!(err instanceof ProviderFailure)) logger.error({ err, runId, caseId: c.id }, 'test case crashed');
      outcome = {
        status: 'errored',
        transcript: [],
        assertion_results: [],
        turns_taken: 0,
        duration_ms: Math.round(clock.monotonicMs() - started),
        tokens_used: 0,
        retry_count: 0,
        error_message: String((err as Error).message).slice(0, MAX_ERROR_CHARS),
      };
    }
    await store.finishResult(sql, runId, result.id, outcome);
    changed(runId);
  }

  async function watchdogJob(job: JobContext<'simtests.watchdog'>): Promise<void> {
    const runId = job.data.run_id;
    const run = await store.getRun(sql, runId);
    if (!run || store.FINISHED_RUN.includes(run.status)) return;
    if (run.status === 'running') {
      const failed = await store.failIfStale(sql, runId, staleSeconds);
      if (failed) {
        logger.warn({ runId, lastHeartbeat: run.last_heartbeat }, 'test run lost its worker: failed');
        changed(runId);
        return;
      }
    }
    await jobs.enqueue('simtests.watchdog', { run_id: runId }, { singletonKey: runId, delaySeconds: staleSeconds });
  }

  await jobs.work('simtests.run', runJob, { concurrency: o.jobConcurrency ?? 2 });
  await jobs.work('simtests.watchdog', watchdogJob, { concurrency: 1 });

  return {
    staleSeconds,
    async enqueue(runId, tx) {
      await jobs.enqueue('simtests.run', { run_id: runId }, { singletonKey: runId, tx });
    },
  };
}
