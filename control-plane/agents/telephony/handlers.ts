/**
 * Telephony binding of an agent (document 2, AgentTelephony). PUT merges: omitted fields keep
 * their value. A phone number belongs to at most one agent platform-wide (draft bindings).
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { AppError, invalid } from '../../../shared/errors.js';
import { isUuid } from '../../../shared/ids.js';
import type { Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { touchAgent } from '../core/store.js';
import { isUniqueViolation, withAgentLock } from '../db.js';
import { oneOf, optionalText, tenantUrl } from '../../http/validate.js';
import { createOutboundPolicy } from '../../../shared/outbound/index.js';
import { isMaskedReadBack, telephonyView } from '../views.js';
import { requireE164 } from './phone.js';
import { getTelephonyRow, upsertTelephonyRow, type TelephonyWrite } from './store.js';

type Impl = ServiceImpl<typeof AgentConfigService>;

export const CALL_DIRECTIONS = ['inbound', 'outbound', 'both'] as const;
export const TRANSFER_MODES = ['phone', 'panel'] as const;
const MAX_TOKEN_CHARS = 4096;

export function telephonyHandlers(deps: AgentsDeps, access: Access): Pick<Impl, 'putAgentTelephony' | 'getAgentTelephony'> {
  const { sql, secrets } = deps;
  const outboundPolicy = createOutboundPolicy(deps.config.outboundAllowCidrs);
  return {
    async putAgentTelephony(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      // Checked before the lock: nothing below reads the stored row.
      const token = req.carrierAuthToken;
      if (token !== undefined && token.length > MAX_TOKEN_CHARS) throw invalid('carrier_auth_token', `must be at most ${MAX_TOKEN_CHARS} characters`);
      const sid = optionalText('carrier_account_sid', req.carrierAccountSid, 200);
      const direction = oneOf('call_direction', req.callDirection, CALL_DIRECTIONS);
      const webhookUrl = tenantUrl('webhook_url', req.webhookUrl, outboundPolicy);
      const transferMode = oneOf('human_transfer_mode', req.humanTransferMode, TRANSFER_MODES);
      const panel = panelProject(req.panelProjectId, agent.workspace_id);
      const newPhone = req.carrierPhoneNumber === undefined || req.carrierPhoneNumber.trim() === '' ? undefined : requireE164('carrier_phone_number', req.carrierPhoneNumber);
      const newTransfer = req.humanTransferNumber === undefined || req.humanTransferNumber.trim() === '' ? undefined : requireE164('human_transfer_number', req.humanTransferNumber);
      let phone: string | null = null;
      try {
        const saved = await withAgentLock(sql, agent.id, ctx.signal, async (tx) => {
          const cur = await getTelephonyRow(tx, agent.id);
          phone = req.carrierPhoneNumber === undefined ? (cur?.carrier_phone_number ?? null) : (newPhone ?? null);
          const row: TelephonyWrite = {
            agent_id: agent.id,
            carrier_phone_number: phone,
            carrier_account_sid: sid ?? cur?.carrier_account_sid ?? '',
            // omitted, or the masked read-back sent again: keep; "" clears (inherit the workspace account)
            carrier_auth_token_enc:
              token === undefined || isMaskedReadBack(secrets, 'carrier_auth_token', token, cur?.carrier_auth_token_enc) ? (cur?.carrier_auth_token_enc ?? null) : token === '' ? null : secrets.encrypt(token),
            call_direction: direction ?? cur?.call_direction ?? 'both',
            webhook_url: webhookUrl ?? cur?.webhook_url ?? '',
            human_transfer_number: req.humanTransferNumber === undefined ? (cur?.human_transfer_number ?? '') : (newTransfer ?? ''),
            human_transfer_mode: transferMode ?? cur?.human_transfer_mode ?? 'phone',
            panel_project_id: panel ?? cur?.panel_project_id ?? '',
            transcribe_human_segment: req.transcribeHumanSegment ?? cur?.transcribe_human_segment ?? false,
            generate_call_summary: req.generateCallSummary ?? cur?.generate_call_summary ?? false,
          };
          const upserted = await upsertTelephonyRow(tx, row);
          await touchAgent(tx, agent.id);
          return upserted;
        });
        return telephonyView(secrets, agent.id, saved);
      } catch (e) {
        if (isUniqueViolation(e, 'agent_telephony_phone_key')) {
          throw new AppError('PHONE_NUMBER_TAKEN', `${phone} is already bound to another agent`, {
            details: [{ field: 'carrier_phone_number', problem: 'already bound to another agent' }],
          });
        }
        throw e;
      }
    },

    async getAgentTelephony(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      return telephonyView(secrets, agent.id, await getTelephonyRow(sql, agent.id, ctx.signal));
    },
  };
}

/**
 * `panel_project_id` (spec: "guarded against cross-workspace linking"). Panel transfers go to the
 * human agents of the agent's own workspace (docs/portal.md), so an id is that workspace's or
 * none; a label that is not an id is kept as the operator's note.
 */
function panelProject(value: string | undefined, workspaceId: string): string | undefined {
  const v = optionalText('panel_project_id', value, 200);
  if (v !== undefined && isUuid(v) && v.toLowerCase() !== workspaceId) {
    throw invalid('panel_project_id', "must be the agent's own workspace id (its call center): panel transfers cannot go to another workspace");
  }
  return v === undefined ? undefined : isUuid(v) ? v.toLowerCase() : v;
}
