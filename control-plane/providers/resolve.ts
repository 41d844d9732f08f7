/**
 * "Which provider of this type would this agent use?" Precedence:
 *   1. the agent's own provider (draft)                      -> source `agent`
 *   2. a user configuration bound to this agent (newest)    -> source `user_config`
 *   3. the owner's user-level default of that type          -> source `user_default`
 *   4. the registry default of that type                     -> source `registry_default`
 * Without an agent, steps 1-2 are skipped and "the owner" is the caller. Publishing freezes steps
 * 1-3 into the version; step 4 never reaches a live call (`sim` is never a silent fallback).
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { Sql } from '../../shared/db/client.js';
import { getProviderRow } from '../agents/agent-providers/store.js';
import type { ProviderType, SnapshotProvider } from '../agents/types.js';
import { definitionByName, registryDefault, userConfigFor, type UserConfigRow } from './store.js';

export type ResolveSource = 'agent' | 'user_config' | 'user_default' | 'registry_default';

export interface ResolvedProviderRow {
  source: ResolveSource;
  provider_type: ProviderType;
  provider_name: string;
  provider_id: string;
  model_name: string;
  base_url: string;
  /** Encrypted; never leaves the server. */
  api_key_enc: string | null;
  config: JsonObject;
}

export function defaultModel(defaultConfig: JsonObject | undefined, models: string[] | undefined): string {
  const m = defaultConfig?.default_model;
  return typeof m === 'string' ? m : (models?.[0] ?? '');
}

function fromUserConfig(c: UserConfigRow, type: ProviderType): ResolvedProviderRow {
  return {
    source: c.agent_id ? 'user_config' : 'user_default',
    provider_type: type,
    provider_name: c.provider_name,
    provider_id: c.provider_id,
    model_name: c.model_name || defaultModel(c.default_config, c.supported_models),
    base_url: c.base_url,
    api_key_enc: c.api_key_enc,
    config: c.config ?? {},
  };
}

export async function resolveProvider(
  sql: Sql,
  q: { agentId?: string; ownerId: string; type: ProviderType; includeRegistry: boolean },
  signal?: AbortSignal,
): Promise<ResolvedProviderRow | undefined> {
  if (q.agentId) {
    const own = await getProviderRow(sql, q.agentId, q.type, signal);
    if (own) {
      const def = await definitionByName(sql, own.provider_name, q.type, signal);
      return {
        source: 'agent',
        provider_type: q.type,
        provider_name: own.provider_name,
        provider_id: def?.id ?? '',
        model_name: own.model_name,
        base_url: own.base_url,
        api_key_enc: own.api_key_enc,
        config: {},
      };
    }
  }
  const cfg = await userConfigFor(sql, q.ownerId, q.agentId, q.type, signal);
  if (cfg) return fromUserConfig(cfg, q.type);
  if (!q.includeRegistry) return undefined;
  const def = await registryDefault(sql, q.type, signal);
  if (!def) return undefined;
  return {
    source: 'registry_default',
    provider_type: q.type,
    provider_name: def.name,
    provider_id: def.id,
    model_name: defaultModel(def.default_config, def.supported_models),
    base_url: def.base_url,
    api_key_enc: null,
    config: def.default_config ?? {},
  };
}

/** Publish-time fallbacks for the types an agent lacks: the owner's configurations only. */
export async function ownerFallbacks(sql: Sql, agentId: string, ownerId: string, missing: ProviderType[]): Promise<SnapshotProvider[]> {
  const out: SnapshotProvider[] = [];
  for (const type of missing) {
    const cfg = await userConfigFor(sql, ownerId, agentId, type);
    if (!cfg) continue;
    const r = fromUserConfig(cfg, type);
    out.push({
      provider_type: type,
      provider_name: r.provider_name,
      api_key_enc: r.api_key_enc,
      model_name: r.model_name,
      base_url: r.base_url,
      source: r.source as SnapshotProvider['source'],
    });
  }
  return out;
}
