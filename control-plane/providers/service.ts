/**
 * `ProviderRegistryService`: platform-wide provider definitions (only the organization owner adds
 * them), each user's own provider configurations (keys write-only) and provider resolution.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { ProviderRegistryService } from '../../shared/gen/voiceplane/v1/providers_pb.js';
import { AppError, alreadyExists, forbidden, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Access } from '../agents/access.js';
import { checkProviderType, MAX_API_KEY_CHARS } from '../agents/agent-providers/handlers.js';
import { isUniqueViolation } from '../agents/db.js';
import type { AgentsDeps } from '../agents/deps.js';
import { pathId, oneOf, optionalText, required, tenantUrl } from '../http/validate.js';
import { createOutboundPolicy } from '../../shared/outbound/index.js';
import { baseUrlProtocols } from '../../shared/providers/registry.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { resolveProvider } from './resolve.js';
import {
  findUserConfigRow,
  getDefinitionRow,
  getUserConfigRow,
  insertDefinitionRow,
  listDefinitionRows,
  listUserConfigRows,
  saveUserConfigRow,
} from './store.js';
import { definitionView, resolvedView, userConfigView } from './views.js';

export const AUTH_TYPES = ['none', 'api_key', 'bearer', 'basic', 'oauth'] as const;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_CONFIG_BYTES = 16 * 1024;
const MAX_LIST_ITEMS = 200;

function checkObjectSize(field: string, v: JsonObject | undefined): JsonObject {
  if (v === undefined) return {};
  if (JSON.stringify(v).length > MAX_CONFIG_BYTES) throw invalid(field, `must be at most ${MAX_CONFIG_BYTES} bytes of JSON`);
  return v;
}

function checkStrings(field: string, xs: string[]): string[] {
  if (xs.length > MAX_LIST_ITEMS) throw invalid(field, `at most ${MAX_LIST_ITEMS} entries`);
  return xs.map((x, i) => required(`${field}[${i}]`, x, 200));
}

export function createProviderRegistryService(deps: AgentsDeps, access: Access): ServiceImpl<typeof ProviderRegistryService> {
  const { sql, secrets } = deps;
  const outboundPolicy = createOutboundPolicy(deps.config.outboundAllowCidrs);
  return {
    async createProviderDefinition(req, ctx) {
      const p = await access.principal(ctx);
      // Definitions are platform-wide: only the organization owner (ORG_API_KEY) curates them.
      if (!p.isOrgOwner) throw forbidden('only the organization owner may add provider definitions');
      const name = required('name', req.name, 64);
      if (!NAME_RE.test(name)) throw invalid('name', 'must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$');
      const providerType = checkProviderType(req.providerType);
      const row = {
        id: newId(),
        name,
        provider_type: providerType,
        description: optionalText('description', req.description, 2000) ?? '',
        base_url: tenantUrl('base_url', req.baseUrl, outboundPolicy, { protocols: baseUrlProtocols(providerType, name) }) ?? '',
        auth_type: oneOf('auth_type', req.authType, AUTH_TYPES) ?? 'api_key',
        is_active: req.isActive ?? true,
        default_config: checkObjectSize('default_config', req.defaultConfig),
        supported_models: checkStrings('supported_models', req.supportedModels),
        supported_languages: checkStrings('supported_languages', req.supportedLanguages),
      };
      try {
        return definitionView(await insertDefinitionRow(sql, row, ctx.signal));
      } catch (e) {
        if (isUniqueViolation(e)) throw alreadyExists(`a ${row.provider_type} provider named ${name} already exists`);
        throw e;
      }
    },

    async listProviderDefinitions(req, ctx) {
      const pg = pageOf(req);
      await access.principal(ctx);
      const type = req.providerType ? checkProviderType(req.providerType) : undefined;
      const { rows, total } = await listDefinitionRows(sql, type, pg, ctx.signal);
      return { providers: rows.map(definitionView), meta: pageMeta(pg, total) };
    },

    async getProviderDefinition(req, ctx) {
      await access.principal(ctx);
      const row = await getDefinitionRow(sql, pathId('provider', req.id), ctx.signal);
      if (!row) throw notFound('provider');
      return definitionView(row);
    },

    async createUserProviderConfig(req, ctx) {
      const p = await access.principal(ctx);
      if (!req.providerId) throw invalid('provider_id', 'is required');
      const def = await getDefinitionRow(sql, pathId('provider', req.providerId), ctx.signal);
      if (!def) throw notFound('provider');
      if (req.providerType !== undefined && req.providerType !== '' && checkProviderType(req.providerType) !== def.provider_type) {
        throw invalid('provider_type', `must match the provider's type (${def.provider_type})`);
      }
      const agentId = req.agentId ? (await access.agent(ctx, req.agentId, 'edit')).agent.id : null;
      if (agentId && req.isDefault) throw invalid('is_default', 'only a configuration without agent_id can be the default');
      if (req.apiKey !== undefined && req.apiKey.length > MAX_API_KEY_CHARS) throw invalid('api_key', `must be at most ${MAX_API_KEY_CHARS} characters`);
      const modelName = optionalText('model_name', req.modelName, 200);
      const config = req.config !== undefined ? checkObjectSize('config', req.config) : undefined;
      // Saving the same (provider, agent) replaces it in place. Two concurrent first saves both
      // insert and one hits the unique index (as do two concurrent "make default" calls): it is
      // saved again over the row that won, so both succeed (the last one's values stay).
      for (let attempt = 1; ; attempt++) {
        const existing = await findUserConfigRow(sql, p.userId, def.id, agentId, ctx.signal);
        // MAX_USER_CONFIGS is enforced by the database on insert (409 LIMIT_REACHED, migration 0004).
        const apiKeyEnc =
          req.apiKey === undefined ? (existing?.api_key_enc ?? null) : req.apiKey === '' ? null : secrets.encrypt(req.apiKey);
        try {
          const id = await saveUserConfigRow(sql, {
            id: existing?.id ?? newId(),
            user_id: p.userId,
            agent_id: agentId,
            provider_id: def.id,
            provider_type: def.provider_type,
            api_key_enc: apiKeyEnc,
            model_name: modelName ?? existing?.model_name ?? '',
            config: config ?? existing?.config ?? {},
            is_default: req.isDefault ?? existing?.is_default ?? false,
          });
          const saved = await getUserConfigRow(sql, id, ctx.signal);
          if (!saved) throw notFound('provider configuration');
          return userConfigView(saved);
        } catch (e) {
          if (!isUniqueViolation(e)) throw e;
          if (attempt >= 3) throw new AppError('CONFLICT', 'another configuration was saved concurrently; retry');
        }
      }
    },

    async listUserProviderConfigs(req, ctx) {
      const pg = pageOf(req);
      const p = await access.principal(ctx);
      const { rows, total } = await listUserConfigRows(sql, p.userId, pg, ctx.signal);
      return { configs: rows.map(userConfigView), meta: pageMeta(pg, total) };
    },

    async resolveProvider(req, ctx) {
      const p = await access.principal(ctx);
      const type = checkProviderType(req.providerType);
      let agentId: string | undefined;
      let ownerId = p.userId;
      if (req.agentId) {
        const { agent } = await access.agent(ctx, req.agentId, 'read');
        agentId = agent.id;
        ownerId = agent.user_id;
      }
      const r = await resolveProvider(sql, { agentId, ownerId, type, includeRegistry: true }, ctx.signal);
      if (!r) throw notFound(`${type} provider`);
      return resolvedView(r);
    },
  };
}
