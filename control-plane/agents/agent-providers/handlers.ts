/** Providers of an agent (llm, tts, asr): create/replace by type, list, delete. Draft only. */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { invalid, notFound } from '../../../shared/errors.js';
import { newId } from '../../../shared/ids.js';
import type { Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { touchAgent } from '../core/store.js';
import { withAgentLock } from '../db.js';
import { PROVIDER_TYPES, type ProviderType } from '../types.js';
import { oneOf, optionalText, required, sameOrigin, tenantUrl } from '../../http/validate.js';
import { createOutboundPolicy } from '../../../shared/outbound/index.js';
import { checkFliteVoice } from '../../../shared/providers/tts/local.js';
import { baseUrlProtocols } from '../../../shared/providers/registry.js';
import { isMaskedReadBack, providerView } from '../views.js';
import { deleteProviderRow, getProviderRow, listProviderRows, upsertProviderRow } from './store.js';

type Impl = ServiceImpl<typeof AgentConfigService>;
export const MAX_API_KEY_CHARS = 4096;

export function checkProviderType(value: string): ProviderType {
  if (!value) throw invalid('provider_type', `is required (one of ${PROVIDER_TYPES.join(', ')})`);
  return oneOf('provider_type', value, PROVIDER_TYPES)!;
}

export function agentProviderHandlers(deps: AgentsDeps, access: Access): Pick<Impl, 'upsertAgentProvider' | 'listAgentProviders' | 'deleteAgentProvider'> {
  const { sql, secrets } = deps;
  const outboundPolicy = createOutboundPolicy(deps.config.outboundAllowCidrs);
  return {
    async upsertAgentProvider(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      const type = checkProviderType(req.providerType);
      const name = required('provider_name', req.providerName, 100);
      const model = optionalText('model_name', req.modelName, 200) ?? '';
      const baseUrl = tenantUrl('base_url', req.baseUrl, outboundPolicy, { protocols: baseUrlProtocols(type, name) }) ?? '';
      // The offline `local` TTS takes its voice in model_name, from a fixed list (Flite would quietly use another).
      if (type === 'tts' && name.trim().toLowerCase() === 'local') {
        try {
          checkFliteVoice(model);
        } catch (err) {
          throw invalid('model_name', (err as Error).message.replace(/^local TTS: /, ''));
        }
      }
      if (req.apiKey !== undefined && req.apiKey.length > MAX_API_KEY_CHARS) throw invalid('api_key', `must be at most ${MAX_API_KEY_CHARS} characters`);
      const row = await withAgentLock(sql, agent.id, ctx.signal, async (tx) => {
        const existing = await getProviderRow(tx, agent.id, type);
        // The masked read-back of the stored key counts as omitted (it was stored as the key itself).
        const apiKey = isMaskedReadBack(secrets, 'api_key', req.apiKey, existing?.api_key_enc) ? undefined : req.apiKey;
        // Omitted key: keep the stored one only for the same provider (a key never follows a vendor change),
        // and never to another host: anyone who may edit the draft could otherwise send the stored key,
        // which they cannot read, to an address of their choosing.
        const keepsKey = existing && existing.provider_name === name;
        if (apiKey === undefined && keepsKey && existing.api_key_enc && !sameOrigin(existing.base_url, baseUrl)) {
          throw invalid('api_key', 'must be sent again when base_url moves to another host (the stored key is never sent to a new address)');
        }
        const apiKeyEnc = apiKey === undefined ? (keepsKey ? existing.api_key_enc : null) : apiKey === '' ? null : secrets.encrypt(apiKey);
        const saved = await upsertProviderRow(tx, { id: existing?.id ?? newId(), agent_id: agent.id, provider_type: type, provider_name: name, api_key_enc: apiKeyEnc, model_name: model, base_url: baseUrl });
        await touchAgent(tx, agent.id);
        return saved;
      });
      return providerView(secrets, row);
    },

    async listAgentProviders(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      const rows = await listProviderRows(sql, agent.id, ctx.signal);
      return { providers: rows.map((r) => providerView(secrets, r)) };
    },

    async deleteAgentProvider(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      const type = checkProviderType(req.providerType);
      if (!(await deleteProviderRow(sql, agent.id, type, ctx.signal))) throw notFound(`${type} provider`);
      await touchAgent(sql, agent.id, ctx.signal);
      return { message: 'deleted' };
    },
  };
}
