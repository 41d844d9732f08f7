/**
 * An engine whose conversation records cannot reach Postgres takes no calls: after
 * RECORDS_UNAVAILABLE_AFTER_MS of failed writes `/ready` answers 503 naming the database and its
 * heartbeat marks it unavailable, so `pickNode` places no session there; it is ready again once a
 * write lands. (Outside testing: such a node answered ready, took calls and lost every record.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry, pickNode } from '../../shared/registry/index.js';
import { RECORDS_UNAVAILABLE_AFTER_MS, type EngineNode } from '../../media-engine/node.js';
import { captureLogger } from '../helpers/infra.js';
import { startSimEngine } from '../helpers/sim-engine.js';

describe('records writer health gates readiness', () => {
  let registry: MemoryRegistry;
  let node: EngineNode;
  let failingForMs = 0;

  beforeAll(async () => {
    registry = new MemoryRegistry();
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10 });
    node = await startSimEngine({ config, logger: captureLogger().logger, registry, recordsFailingForMs: () => failingForMs, heartbeatMs: 50 });
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  const ready = async () => {
    const res = await fetch(`http://127.0.0.1:${node.port}/ready`);
    return { status: res.status, body: (await res.json()) as { status: string; problem?: string } };
  };
  const placeable = async () => pickNode(await registry.nodes.listNodes())?.nodeId === node.nodeId;

  it('a blip is tolerated; a sustained failure makes the node unready and unplaceable; a landed write restores it', async () => {
    expect((await ready()).status).toBe(200);
    failingForMs = RECORDS_UNAVAILABLE_AFTER_MS - 1;
    expect((await ready()).status).toBe(200);
    failingForMs = RECORDS_UNAVAILABLE_AFTER_MS;
    const down = await ready();
    expect(down).toEqual({ status: 503, body: expect.objectContaining({ status: 'database_unavailable', problem: expect.stringContaining('DATABASE_URL') }) });
    await expect.poll(placeable, { timeout: 5000, interval: 25 }).toBe(false);
    failingForMs = 0;
    expect((await ready()).status).toBe(200);
    await expect.poll(placeable, { timeout: 5000, interval: 25 }).toBe(true);
  });
});
