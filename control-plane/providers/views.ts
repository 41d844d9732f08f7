/** Registry rows -> public messages. A user configuration's api_key never leaves: only `has_api_key`. */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ProviderDefinitionSchema, ResolvedProviderSchema, UserProviderConfigSchema } from '../../shared/gen/voiceplane/v1/providers_pb.js';
import { iso } from '../agents/db.js';
import type { ResolvedProviderRow } from './resolve.js';
import type { DefinitionRow, UserConfigRow } from './store.js';

export function definitionView(d: DefinitionRow): MessageInitShape<typeof ProviderDefinitionSchema> {
  return {
    id: d.id,
    name: d.name,
    providerType: d.provider_type,
    description: d.description,
    baseUrl: d.base_url,
    authType: d.auth_type,
    isActive: d.is_active,
    defaultConfig: d.default_config ?? {},
    supportedModels: d.supported_models ?? [],
    supportedLanguages: d.supported_languages ?? [],
    createdAt: iso(d.created_at),
    updatedAt: iso(d.updated_at),
  };
}

export function userConfigView(c: UserConfigRow): MessageInitShape<typeof UserProviderConfigSchema> {
  return {
    id: c.id,
    userId: c.user_id,
    agentId: c.agent_id ?? '',
    providerId: c.provider_id,
    providerName: c.provider_name,
    providerType: c.provider_type,
    modelName: c.model_name,
    config: c.config ?? {},
    isDefault: c.is_default,
    hasApiKey: Boolean(c.api_key_enc),
    createdAt: iso(c.created_at),
    updatedAt: iso(c.updated_at),
  };
}

export function resolvedView(r: ResolvedProviderRow): MessageInitShape<typeof ResolvedProviderSchema> {
  return {
    source: r.source,
    providerType: r.provider_type,
    providerName: r.provider_name,
    providerId: r.provider_id,
    modelName: r.model_name,
    baseUrl: r.base_url,
    hasApiKey: Boolean(r.api_key_enc),
    config: r.config ?? {},
  };
}
