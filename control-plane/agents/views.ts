/**
 * Rows -> public proto messages. The only place secrets meet a response: every stored secret is
 * decrypted just to be masked (bullets plus the last four characters) and nothing else leaves.
 */
import { fromJson, type DescMessage, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { maskSecret, type SecretBox } from '../../shared/secrets.js';
import { invalid } from '../../shared/errors.js';
import type {
  AgentProviderSchema,
  AgentSchema,
  AgentTelephonySchema,
  AgentToolSchema,
  ConnectorBindingSchema,
  ConversationFlowSchema,
  FlowGraphSchema,
  FlowValidationErrorSchema,
  KnowledgeBaseBindingSchema,
} from '../../shared/gen/voiceplane/v1/agents_pb.js';
import { iso } from './db.js';
import { validateFlow } from './flow/validate.js';
import type {
  AgentRow,
  AgentProviderRow,
  ConnectorBindingJson,
  FlowGraphJson,
  FlowRow,
  FlowValidationErrorJson,
  KbBindingRow,
  TelephonyRow,
  ToolRow,
} from './types.js';

type Init<S extends DescMessage> = MessageInitShape<S>;

/** Masked form of an encrypted secret; "" when none. An undecryptable value shows bullets only. */
export function maskStored(secrets: SecretBox, enc: string | null | undefined): string {
  if (!enc) return '';
  try {
    return maskSecret(secrets.decrypt(enc));
  } catch {
    return '••••••••';
  }
}

/**
 * Whether `sent` is the masked read-back of the stored secret (a client that PUTs back what it
 * read): the stored secret stays. A masked value that is not this secret's mask (another
 * secret's, or none is stored) was kept silently, or for provider keys stored as the key itself:
 * 400 naming the field.
 */
export function isMaskedReadBack(secrets: SecretBox, field: string, sent: string | undefined, storedEnc: string | null | undefined): boolean {
  if (sent === undefined || !sent.startsWith('•')) return false;
  if (sent !== maskStored(secrets, storedEnc)) {
    throw invalid(field, 'is a masked value that is not the stored secret\'s: send the secret itself, leave the field out to keep the stored one, or "" to clear it');
  }
  return true;
}

export function agentView(r: AgentRow): Init<typeof AgentSchema> {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    userId: r.user_id,
    name: r.name,
    description: r.description,
    systemPrompt: r.system_prompt,
    welcomeMessage: r.welcome_message,
    language: r.language,
    maxTurns: r.max_turns,
    connectionType: r.connection_type,
    interruptEnabled: r.interrupt_enabled,
    vadThreshold: r.vad_threshold,
    silenceTimeoutMs: r.silence_timeout_ms,
    isActive: r.is_active,
    allowHumanTransfer: r.allow_human_transfer,
    mode: r.mode,
    metadata: r.metadata ?? {},
    connectors: r.connectors ?? [],
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    liveVersion: r.live_version ?? 0,
  };
}

export function providerView(secrets: SecretBox, r: AgentProviderRow): Init<typeof AgentProviderSchema> {
  return {
    id: r.id,
    agentId: r.agent_id,
    providerType: r.provider_type,
    providerName: r.provider_name,
    apiKey: maskStored(secrets, r.api_key_enc),
    modelName: r.model_name,
    baseUrl: r.base_url,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export function bindingView(b: ConnectorBindingJson): Init<typeof ConnectorBindingSchema> {
  return {
    connectionId: b.connection_id,
    actions: b.actions.map((a) => ({
      name: a.name,
      description: a.description,
      parameters: a.parameters,
      fixed: a.fixed,
      ...(a.fixed_labels ? { fixedLabels: a.fixed_labels } : {}),
    })),
  };
}

export function toolView(secrets: SecretBox, r: ToolRow): Init<typeof AgentToolSchema> {
  return {
    id: r.id,
    agentId: r.agent_id,
    name: r.name,
    description: r.description,
    functionSchema: r.function_schema ?? {},
    endpointUrl: r.endpoint_url,
    httpMethod: r.http_method,
    headers: r.headers ?? {},
    authType: r.auth_type,
    authToken: maskStored(secrets, r.auth_token_enc),
    requestBody: fromJson(ValueSchema, (r.request_body ?? null) as JsonValue),
    responsePath: r.response_path,
    timeoutMs: r.timeout_ms,
    retryCount: r.retry_count,
    isActive: r.is_active,
    connectorBinding: r.connector_binding ? bindingView(r.connector_binding) : undefined,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export function kbView(r: KbBindingRow): Init<typeof KnowledgeBaseBindingSchema> {
  return {
    id: r.id,
    agentId: r.agent_id,
    knowledgeBaseId: r.knowledge_base_id,
    mode: r.mode,
    isActive: r.is_active,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    title: r.title ?? '',
  };
}

export function graphView(g: FlowGraphJson): Init<typeof FlowGraphSchema> {
  return {
    nodes: g.nodes.map((n) => ({ id: n.id, type: n.type, label: n.label, ...(n.config ? { config: n.config } : {}) })),
    edges: g.edges.map((e) => ({ from: e.from, to: e.to, condition: e.condition ?? '' })),
    startNodeId: g.start_node_id,
  };
}

export function flowErrorsView(errors: FlowValidationErrorJson[]): Init<typeof FlowValidationErrorSchema>[] {
  return errors.map((e) => ({ code: e.code, message: e.message, nodeIds: e.node_ids }));
}

export const EMPTY_GRAPH: FlowGraphJson = { nodes: [], edges: [], start_node_id: '' };

/** The stored flow, or the empty flow (no id, version 0) when none exists; validity is computed. */
export function flowView(agentId: string, r: FlowRow | undefined): Init<typeof ConversationFlowSchema> {
  const graph = r?.graph ?? EMPTY_GRAPH;
  const errors = validateFlow(graph);
  return {
    id: r?.id ?? '',
    agentId,
    version: r?.version ?? 0,
    graph: graphView(graph),
    variables: (r?.variables ?? []).map((v) => ({ name: v.name, type: v.type })),
    isValid: errors.length === 0,
    validationErrors: flowErrorsView(errors),
    createdAt: iso(r?.created_at),
    updatedAt: iso(r?.updated_at),
  };
}

export function telephonyView(secrets: SecretBox, agentId: string, r: TelephonyRow | undefined): Init<typeof AgentTelephonySchema> {
  return {
    agentId,
    carrierPhoneNumber: r?.carrier_phone_number ?? '',
    carrierAccountSid: r?.carrier_account_sid ?? '',
    carrierAuthToken: maskStored(secrets, r?.carrier_auth_token_enc),
    callDirection: r?.call_direction ?? 'both',
    webhookUrl: r?.webhook_url ?? '',
    humanTransferNumber: r?.human_transfer_number ?? '',
    humanTransferMode: r?.human_transfer_mode ?? 'phone',
    panelProjectId: r?.panel_project_id ?? '',
    transcribeHumanSegment: r?.transcribe_human_segment ?? false,
    generateCallSummary: r?.generate_call_summary ?? false,
    createdAt: iso(r?.created_at),
    updatedAt: iso(r?.updated_at),
  };
}
