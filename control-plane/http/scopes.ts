/**
 * API-key scopes: one table maps every RPC method of the platform (service type name + proto method
 * name; REST routes call the same methods) to what it needs. Enforced in one place, where the
 * caller's principal is resolved (`AccountsAuth.principal(ctx)`: the HandlerContext names the
 * method), so REST, Connect, gRPC-Web, gRPC and the raw handlers (SSE) all get the same answer.
 *
 * Rules:
 * - A method missing from the table FAILS CLOSED: every API key is refused (403) until someone
 *   adds the method here (a unit test asserts every method of every proto service has an entry).
 * - `<area>:write` implies `<area>:read`.
 * - `*` is every scope. An API key with an EMPTY scope list is unscoped (every scope, like `*`):
 *   keys created before scopes were enforced keep working (backwards compatibility, documented in
 *   docs/accounts.md). The organization key is `*`.
 * - JWT access tokens (dashboard sessions) are not scope-limited; roles still apply.
 * - `public`: the method checks no bearer (sign-up, carrier webhooks, health, voice sessions whose
 *   session id is the credential). `authenticated`: any valid credential, no scope (`/auth/me`).
 */
import { AppError } from '../../shared/errors.js';
import type { Principal } from './auth.js';

/** Every scope a key can carry (plus `*`). Documented in docs/accounts.md. */
export const SCOPES = [
  'agents:read',
  'agents:write',
  'providers:read',
  'providers:write',
  'conversations:read',
  'conversations:write',
  'telephony:read',
  'telephony:write',
  'workspaces:read',
  'workspaces:write',
  'memory:read',
  'memory:write',
  'api_keys:read',
  'api_keys:write',
  'webhooks:read',
  'webhooks:write',
  'campaigns:read',
  'campaigns:write',
  'analysis:read',
  'analysis:write',
  'qa:read',
  'qa:write',
  'alerts:read',
  'alerts:write',
  'connectors:read',
  'connectors:write',
  'portal:read',
  'portal:write',
] as const;

export type Scope = (typeof SCOPES)[number];
export type ScopeRule = Scope | 'public' | 'authenticated';

export const ALL_SCOPES = '*';

const AGENT_READ = ['GetAgent', 'ListAgents', 'LookupAgentByPhone'];
const CONFIG_READ = ['ListAgentProviders', 'ListTools', 'GetTool', 'ListKnowledgeBaseBindings', 'GetFlow', 'ValidateFlow', 'GetAgentMode', 'GetAgentTelephony', 'ListAgentVersions'];

/** `typeName` -> proto method name -> rule. Keep in step with docs/accounts.md ("Scopes"). */
export const SCOPE_TABLE: Readonly<Record<string, Readonly<Record<string, ScopeRule>>>> = {
  'voiceplane.v1.HealthService': { Live: 'public', Ready: 'public' },
  'voiceplane.v1.AuthService': {
    Register: 'public',
    VerifyOtp: 'public',
    ResendOtp: 'public',
    Login: 'public',
    Refresh: 'public',
    // The X-Auth-Token value is the credential checked, not the bearer.
    Validate: 'public',
    Me: 'authenticated',
  },
  // The service itself also requires the organization key (development only).
  'voiceplane.v1.DevMailboxService': { ListMessages: 'authenticated' },
  'voiceplane.v1.ApiKeyService': { CreateApiKey: 'api_keys:write', ListApiKeys: 'api_keys:read', RevokeApiKey: 'api_keys:write' },
  'voiceplane.v1.WorkspaceService': {
    CreateWorkspace: 'workspaces:write',
    ListWorkspaces: 'workspaces:read',
    GetWorkspace: 'workspaces:read',
    UpdateWorkspace: 'workspaces:write',
    DeleteWorkspace: 'workspaces:write',
    ListMembers: 'workspaces:read',
    AddMember: 'workspaces:write',
    RemoveMember: 'workspaces:write',
  },
  'voiceplane.v1.MemoryService': {
    CreateMemoryItem: 'memory:write',
    ListMemoryItems: 'memory:read',
    UpdateMemoryItem: 'memory:write',
    DeleteMemoryItem: 'memory:write',
  },
  'voiceplane.v1.AgentService': {
    ...rules(AGENT_READ, 'agents:read'),
    ...rules(['CreateAgent', 'UpdateAgent', 'DeleteAgent'], 'agents:write'),
  },
  // Simulation tests (issue 20): part of the agent's configuration, like its tools.
  'voiceplane.v1.SimTestService': {
    ...rules(['ListTestCases', 'ListTestRuns', 'GetTestRun', 'ListTestResults', 'GetPublishGate'], 'agents:read'),
    ...rules(['CreateTestCase', 'UpdateTestCase', 'DeleteTestCase', 'CreateTestRun', 'CancelTestRun', 'PutPublishGate'], 'agents:write'),
  },
  'voiceplane.v1.AgentConfigService': {
    ...rules(CONFIG_READ, 'agents:read'),
    ...rules(
      [
        'UpsertAgentProvider',
        'DeleteAgentProvider',
        'CreateTool',
        'UpdateTool',
        'DeleteTool',
        'CreateKnowledgeBaseBinding',
        'UpdateKnowledgeBaseBinding',
        'DeleteKnowledgeBaseBinding',
        'PutFlow',
        'PutAgentMode',
        'PutAgentTelephony',
        'PublishAgent',
        'RollbackAgent',
      ],
      'agents:write',
    ),
  },
  'voiceplane.v1.ProviderRegistryService': {
    CreateProviderDefinition: 'providers:write',
    ListProviderDefinitions: 'providers:read',
    GetProviderDefinition: 'providers:read',
    CreateUserProviderConfig: 'providers:write',
    ListUserProviderConfigs: 'providers:read',
    ResolveProvider: 'providers:read',
  },
  'voiceplane.v1.ConversationService': {
    ...rules(['ListConversations', 'GetConversation', 'ListConversationMessages', 'GetConversationBySession', 'GetConversationSummary', 'CountAgentConversations'], 'conversations:read'),
    ...rules(['CreateConversation', 'UpdateConversation', 'CreateConversationMessage', 'UpdateConversationMessage', 'CreateToolCall'], 'conversations:write'),
    Live: 'public',
    Ready: 'public',
  },
  'voiceplane.v1.TelephonyService': {
    // Carrier webhooks: verified by each carrier's signature (X-Twilio-Signature, X-SignalWire-Signature, Ed25519), no bearer (spec doc 2, Authentication 1).
    ...rules(['InboundCall', 'CallStatusCallback', 'RecordingCallback', 'AmdCallback', 'DialComplete', 'CarrierInbound', 'CarrierEvent', 'ListProviders', 'Capabilities'], 'public'),
    PlaceOutboundCall: 'telephony:write',
    ListCalls: 'telephony:read',
    GetCall: 'telephony:read',
    EndCall: 'telephony:write',
    TransferCall: 'telephony:write',
  },
  // Call-center webhooks (spec doc 3); roles apply on top (writes, test, retry: owner/admin).
  'voiceplane.v1.ConnectorService': {
    ...rules(['ListCatalog', 'ListConnections', 'ListConnectionAgents', 'ListAgentConnectors', 'ListResources'], 'connectors:read'),
    ...rules(['StartOAuth', 'ConnectKey', 'Disconnect', 'ExecuteAction', 'EnableAgentConnector', 'DisableAgentConnector'], 'connectors:write'),
    // The vendor's browser redirect: the signed single-use `state` is the credential, not a bearer.
    OAuthCallback: 'public',
  },
  'voiceplane.v1.WebhookService': {
    ...rules(['GetWebhookSettings', 'ListWebhookDeliveries', 'GetWebhookDelivery'], 'webhooks:read'),
    ...rules(['PutWebhookSettings', 'SendTestWebhook', 'RetryWebhookDelivery'], 'webhooks:write'),
  },
  // Outbound campaigns (spec doc 2, "Campaigns"); the CSV upload and export raw routes use these too.
  'voiceplane.v1.CampaignService': {
    ...rules(['ListCampaigns', 'GetCampaign', 'ListCampaignCalls', 'ExportCampaignCsv'], 'campaigns:read'),
    ...rules(['CreateCampaign', 'UpdateCampaign', 'UploadCampaignCsv', 'StartCampaign', 'PauseCampaign', 'CancelCampaign'], 'campaigns:write'),
  },
  // Post-call analysis (issue 16): its own scopes, so a key can read extracted values and insights
  // without reading transcripts (`conversations:read`); roles apply on top (schema writes: manager).
  'voiceplane.v1.AnalysisService': {
    ...rules(['ListAnalysisSchemas', 'ListAnalysisResults', 'GetAnalysisInsights'], 'analysis:read'),
    ...rules(['CreateAnalysisSchema', 'UpdateAnalysisSchema', 'DeleteAnalysisSchema'], 'analysis:write'),
  },
  // QA rubrics and scores (issue 16): own scopes like analysis; roles apply on top (writes, binding, reviews: manager).
  'voiceplane.v1.QaService': {
    ...rules(['ListQaRubrics', 'GetAgentQaRubric', 'ListQaScores'], 'qa:read'),
    ...rules(['CreateQaRubric', 'UpdateQaRubric', 'DeleteQaRubric', 'BindQaRubric', 'UnbindQaRubric', 'ReviewQaScore'], 'qa:write'),
  },
  // `TestAlertRule` reads only (no event, no notification).
  // Human agents (issue 21, docs/portal.md): roster, credentials, presence. The agents' own login
  // and reset confirmation carry no bearer (their password or reset token is the credential).
  'voiceplane.v1.PortalService': {
    ...rules(['ListHumanAgents', 'GetHumanAgent', 'PasswordAudit', 'PresenceRealtime', 'Attendance', 'Timeline', 'PresenceAlerts', 'AgentShifts', 'ActiveSessions'], 'portal:read'),
    ...rules(['CreateHumanAgent', 'UpdateHumanAgent', 'DeactivateHumanAgent', 'SetPassword', 'ResetPassword', 'SendCredentials', 'AcknowledgeAlert', 'UpsertShift', 'DeleteShift', 'RequestHandoff'], 'portal:write'),
    ...rules(['PortalLogin', 'ConfirmReset'], 'public'),
  },
  'voiceplane.v1.AlertService': {
    ...rules(['ListAlertRules', 'ListAlertEvents', 'GetActiveAlertCount', 'TestAlertRule'], 'alerts:read'),
    ...rules(['CreateAlertRule', 'UpdateAlertRule', 'DeleteAlertRule', 'ResolveAlertEvent'], 'alerts:write'),
  },
  // Pipeline analytics (issue 16): provider/model latency and status aggregates, no transcript
  // content, grouped with analysis ("Analysis and conversation analytics" in spec doc 3).
  'voiceplane.v1.PipelineAnalyticsService': rules(['GetPipelineEvents', 'GetPipelineSummary'], 'analysis:read'),
  // Credits (issue 17, docs/billing.md): a workspace's money, so the workspace scopes; roles and
  // the operator rule apply on top.
  'voiceplane.v1.BillingService': {
    ...rules(['GetBalance', 'ListLedger', 'GetPrices'], 'workspaces:read'),
    ...rules(['TopUp', 'Adjust', 'SetPrices'], 'workspaces:write'),
  },
  // System analytics (issue 17): latency, usage and tool aggregates, no transcript content, like
  // pipeline analytics. System health needs no scope of its own: it is org-owner only (service.ts).
  'voiceplane.v1.SystemAnalyticsService': {
    ...rules(['GetLatencyMetrics', 'GetUsage', 'GetToolMetrics'], 'analysis:read'),
    GetSystemHealth: 'authenticated',
  },
  // Voice routes check no bearer (spec doc 2, Authentication 2): the session id is the credential.
  'voiceplane.v1.VoiceService': rules(['StartSession', 'InjectText', 'EndSession', 'Capabilities', 'Live', 'Ready'], 'public'),
};

function rules(methods: string[], rule: ScopeRule): Record<string, ScopeRule> {
  return Object.fromEntries(methods.map((m) => [m, rule]));
}

export function ruleFor(typeName: string, method: string): ScopeRule | undefined {
  return SCOPE_TABLE[typeName]?.[method];
}

/** Keys with no scopes or with `*` hold every scope (see the header). */
export function isUnscoped(scopes: readonly string[]): boolean {
  return scopes.length === 0 || scopes.includes(ALL_SCOPES);
}

/** Whether a scope list grants `scope` (`x:write` grants `x:read`). */
export function grants(scopes: readonly string[], scope: string): boolean {
  if (isUnscoped(scopes) || scopes.includes(scope)) return true;
  return scope.endsWith(':read') && scopes.includes(`${scope.slice(0, -':read'.length)}:write`);
}

/**
 * Throws 403 FORBIDDEN unless the principal may call the method. Only API keys are limited; a
 * method without a table entry refuses every API key (fail closed).
 */
export function requireScope(p: Principal, typeName: string, method: string): void {
  if (p.via !== 'api_key') return;
  const rule = ruleFor(typeName, method);
  if (rule === undefined) {
    throw new AppError('FORBIDDEN', `API keys may not call ${typeName}/${method}: no scope is defined for it`, {
      details: [{ field: 'scopes', problem: `no scope rule for ${method}` }],
    });
  }
  if (rule === 'public' || rule === 'authenticated') return;
  if (!grants(p.scopes, rule)) {
    throw new AppError('FORBIDDEN', `this API key lacks the ${rule} scope`, { details: [{ field: 'scopes', problem: `missing ${rule}` }] });
  }
}

/**
 * Scopes of `requested` that `holder` does not hold: a key may only create keys with a subset of
 * its own scopes. An unscoped request (`[]` or `*`) is every scope, so only an unscoped holder may
 * make one. Returned as the missing scope names (`*` for an unscoped request).
 */
export function missingScopes(holder: readonly string[], requested: readonly string[]): string[] {
  if (isUnscoped(holder)) return [];
  if (isUnscoped(requested)) return [ALL_SCOPES];
  return requested.filter((s) => !grants(holder, s));
}

export function isKnownScope(s: string): boolean {
  return s === ALL_SCOPES || (SCOPES as readonly string[]).includes(s);
}
