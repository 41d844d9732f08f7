/**
 * The agent detail (`GetAgent`: agent fields, providers, telephony, knowledge bindings) cached
 * per agent id, so a read of an unchanged agent touches no database (issue 13; docs/caching.md).
 *
 * Invalidation: every method of AgentService / AgentConfigService that is not a read names its
 * agent (`id` or `agent_id`) and publishes an `agent` notice when it returns or throws
 * (`withAgentNotices`), so no handler can forget it. A workspace notice (workspace deleted,
 * knowledge item renamed or deleted) drops that workspace's agents. The TTL (CACHE_TTL_MS)
 * bounds anything a lost notice leaves behind. Cached values are deep-frozen: the same object is
 * handed to every caller (the REST edge reuses its serialized JSON, http/rest.ts).
 */
import type { DescService } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { FLUSH_ALL, type InvalidationBus } from '../../shared/registry/types.js';
import type { Logger } from '../../shared/logger.js';
import { AppError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { ReadCache } from '../cache/read-cache.js';
import { Topic } from '../cache/topics.js';
import { deepFreeze } from '../cache/freeze.js';

export interface AgentViewEntry<V> {
  workspaceId: string;
  view: V;
}

export interface AgentViewCacheOptions {
  ttlMs: number;
  max?: number;
  clock: { monotonicMs(): number };
}

export class AgentViewCache<V extends object> {
  readonly cache: ReadCache<AgentViewEntry<V>>;
  private unsubscribe?: () => Promise<void>;

  constructor(
    opts: AgentViewCacheOptions,
    private readonly bus?: InvalidationBus,
  ) {
    this.cache = new ReadCache({ max: opts.max ?? 10_000, ttlMs: opts.ttlMs, clock: opts.clock as never, enabled: !bus });
  }

  async start(): Promise<void> {
    if (!this.bus || this.unsubscribe) return;
    this.unsubscribe = await this.bus.subscribe(this.onNotice);
    this.cache.enable();
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /** The cached detail, else `loader()`'s (frozen, and stored unless a notice arrived meanwhile). */
  load(agentId: string, loader: () => Promise<AgentViewEntry<V> | undefined>): Promise<AgentViewEntry<V> | undefined> {
    return this.cache.load(agentId, async () => {
      const e = await loader();
      return e && { workspaceId: e.workspaceId, view: deepFreeze(e.view) };
    });
  }

  /** Tells every replica (this one at once) that the agent changed. Never throws. */
  async changed(agentId: string): Promise<void> {
    if (this.bus) await this.bus.publish(Topic.agent, agentId);
    else this.onNotice(Topic.agent, agentId);
  }

  private readonly onNotice = (topic: string, key: string): void => {
    if (topic === Topic.agent) this.cache.delete(key);
    else if (topic === Topic.workspace) this.cache.deleteWhere((_k, e) => e.workspaceId === key);
    else if (topic === FLUSH_ALL) this.cache.clear();
  };
}

/** Reads: named so; everything else may write and publishes a notice for its agent. */
const READ = /^(get|list|lookup|validate)/;

/** Refusals that happen before any write (caller unknown, fenced, not allowed, bad field): no notice. */
const REFUSED = new Set(['UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'INVALID_REQUEST']);

/**
 * Wraps a service implementation: after every non-read method that returned, or that failed
 * other than by a refusal (a failure half-way may still have written), a notice for the agent the
 * request names.
 */
export function withAgentNotices<S extends DescService>(service: S, impl: ServiceImpl<S>, views: AgentViewCache<object>, logger: Logger): ServiceImpl<S> {
  const out: Record<string, unknown> = { ...impl };
  for (const m of service.methods) {
    if (READ.test(m.localName) || m.methodKind !== 'unary') continue;
    const fn = (impl as Record<string, (req: unknown, ctx: HandlerContext) => unknown>)[m.localName];
    if (!fn) continue;
    out[m.localName] = async (req: { id?: string; agentId?: string }, ctx: HandlerContext) => {
      let refused = false;
      try {
        return await fn(req, ctx);
      } catch (err) {
        refused = err instanceof AppError && REFUSED.has(err.code);
        throw err;
      } finally {
        const id = (req.agentId || req.id || '').toLowerCase();
        if (id && isUuid(id) && !refused) await views.changed(id).catch((err: unknown) => logger.warn({ err }, 'agent change notice failed'));
      }
    };
  }
  return out as ServiceImpl<S>;
}
