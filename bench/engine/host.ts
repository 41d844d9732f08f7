/**
 * The engine under test, in its own process: one `startEngineNode` with sim providers (latencies
 * from `init`), the probe attached, and IPC methods for the bench driver. Started with
 * `--expose-gc` so memory is read after a full collection.
 *
 *   forked by bench/engine/step.ts and bench/routing.ts; never run by hand.
 */
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { createLogger } from '../../shared/logger.js';
import { MemoryRegistry, RedisRegistry, type Registry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { sessionConfig } from '../../test/helpers/session-config.js';
import { serveParent } from '../lib/child.js';
import { fullGc, ProcessWindow } from '../lib/proc-stats.js';
import { EngineProbe } from './probe.js';
import { benchProviders, type ProviderMode } from './providers.js';
import { startBareServer, type BareServer } from './bare.js';

export interface HostInit {
  /** `memory`: sessions are created through `createSessions`; `redis`: by a control plane. */
  registry: 'memory' | 'redis';
  redisUrl?: string;
  redisPrefix?: string;
  nodeId?: string;
  /** Sim provider latencies (0 = answer at once). */
  llmTtftMs: number;
  llmTokensPerSecond: number;
  ttsTtfbMs: number;
  asrLatencyMs: number;
  /** Calls and sockets this node accepts. */
  capacity: number;
  /** Provider behaviour (see providers.ts). */
  providerMode: ProviderMode;
  /**
   * Projection only: flush the VAD's high-pass state to zero after each frame when it has decayed
   * below 1e-20 (the proposed fix for denormal arithmetic on silence). Off = the engine as shipped.
   */
  vadDenormalFix: boolean;
  /** Projection only: carrier 8 -> 16 kHz upsampling by linear interpolation (probe.ts). */
  cheapUpsample?: boolean;
  /** CARRIER_OUT_MESSAGE_MS of the node; absent: the engine's default (40). */
  carrierOutMessageMs?: number;
}

let node: EngineNode | undefined;
let bare: BareServer | undefined;
let registry: Registry | undefined;
const probe = new EngineProbe();
const win = new ProcessWindow(10);

async function init(p: HostInit): Promise<{ port: number; nodeId: string; gc: boolean }> {
  registry = p.registry === 'redis' ? await RedisRegistry.connect({ url: p.redisUrl!, prefix: p.redisPrefix }) : new MemoryRegistry();
  const config = loadConfig(p.carrierOutMessageMs ? { CARRIER_OUT_MESSAGE_MS: String(p.carrierOutMessageMs) } : {}, { enginePort: 0, host: '127.0.0.1', engineCapacity: p.capacity, maxSockets: p.capacity + 16, maxSocketsPerIp: p.capacity + 16, socketOpensPerIpPerS: 1_000_000 });
  node = await startEngineNode({
    config,
    logger: createLogger({ level: 'warn' }),
    clock: realClock,
    registry,
    nodeId: p.nodeId,
    port: 0,
    recorderFactory: () => probe.recorder(),
    providerFactory: () => benchProviders(p.providerMode, p),
  });
  probe.attach(node, { vadDenormalFix: p.vadDenormalFix, cheapUpsample: p.cheapUpsample });
  return { port: node.port, nodeId: node.nodeId, gc: fullGc() };
}

/** Session settings for load: no welcome, no idle nudges, barge-in on. */
export function benchSessionConfig(over: Partial<SessionConfig> = {}): SessionConfig {
  return sessionConfig({ welcome_message: '', welcome_mode: 'none', silence_timeout_ms: 600_000, idle_max_attempts: 0, max_turns: 10_000, interrupt_enabled: true, ...over });
}

async function createSessions(p: { count: number; connectionType?: string }): Promise<string[]> {
  if (bare) return Array.from({ length: p.count }, (_, i) => `bare-${i}`);
  if (!node || !registry) throw new Error('not initialised');
  const ids: string[] = [];
  const now = Date.now();
  for (let i = 0; i < p.count; i++) {
    const cfg = benchSessionConfig();
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: now, connectDeadlineMs: now + 10 * 60_000 });
    ids.push(cfg.session_id);
  }
  return ids;
}

serveParent(
  {
    init,
    /** The baseline server instead of the engine (bare.ts). */
    initBare: async () => {
      bare = await startBareServer();
      return { port: bare.port, nodeId: 'bare', gc: fullGc() };
    },
    createSessions,
    calls: () => node?.calls.size ?? bare?.calls() ?? 0,
    resetWindow: () => {
      win.reset();
      probe.reset();
      bare?.reset();
      return true;
    },
    /** Window stats; `gc` first collects garbage so memory figures are live data only. */
    snapshot: (p: { gc?: boolean } = {}) => {
      const stats = win.read();
      const probeSnap = bare ? bare.snapshot() : probe.snapshot();
      if (p.gc) fullGc();
      const mem = process.memoryUsage();
      return { stats, probe: probeSnap, calls: node?.calls.size ?? bare?.calls() ?? 0, mem };
    },
    /** A V8 heap snapshot (after a full GC) written to `file`: what the calls hold, by constructor. */
    heapSnapshot: (p: { file: string }) => {
      fullGc();
      return writeHeapSnapshot(p.file);
    },
    /**
     * Memory after a full GC (the caller's baseline and idle/active readings). The first reading,
     * the baseline, comes after a churn through V8's young generation (warmYoungGeneration).
     */
    memory: () => {
      if (!youngGenerationWarm) {
        warmYoungGeneration();
        youngGenerationWarm = true;
      }
      fullGc();
      return process.memoryUsage();
    },
    endAll: async () => {
      for (const a of [...(node?.calls.values() ?? [])]) a.endCall('bench_done');
      return true;
    },
  },
  async () => {
    bare?.close();
    await node?.close();
    await registry?.close();
  },
);

let youngGenerationWarm = false;
let churnSink: unknown;

/**
 * Makes every page of V8's young generation resident once, as any engine that has been carrying
 * calls for a moment has it. An idle engine has touched only part of its new space (32 MiB
 * reserved here); the first seconds of calls touch the rest, 14-16 MiB of RSS that does not grow
 * with N (measured 2026-11-29: with --max-semi-space-size=4 the idle RSS per call at N = 400 fell
 * from 69 to 33 KiB). Without this the baseline left that fixed cost inside "memory per call".
 */
/*
 * Short-lived garbage never grows the new space (V8 grows it for survivors), so this touches what
 * is reserved at the time, 32 MiB in every run measured; if calls later grow it, that growth is
 * still counted per call.
 */
function warmYoungGeneration(): void {
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  const bytes = 2 * (newSpace?.space_size ?? 32 * 1024 * 1024);
  // Short-lived objects of 20-32 bytes: at least 2x the new space's size, so both semispaces cycle.
  for (let i = 0; i < bytes / 16; i++) churnSink = { i, next: churnSink === undefined ? undefined : i };
  churnSink = undefined;
}
