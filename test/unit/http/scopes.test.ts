/**
 * The scope table (control-plane/http/scopes.ts) covers every method of every proto service, so a
 * new method cannot ship without deciding its scope (a missing entry refuses every API key).
 */
import { describe, expect, it } from 'vitest';
import type { GenFile } from '@bufbuild/protobuf/codegenv2';
import { file_voiceplane_v1_alerts } from '../../../shared/gen/voiceplane/v1/alerts_pb.js';
import { file_voiceplane_v1_analysis } from '../../../shared/gen/voiceplane/v1/analysis_pb.js';
import { file_voiceplane_v1_analytics } from '../../../shared/gen/voiceplane/v1/analytics_pb.js';
import { file_voiceplane_v1_accounts } from '../../../shared/gen/voiceplane/v1/accounts_pb.js';
import { file_voiceplane_v1_agents } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { file_voiceplane_v1_billing } from '../../../shared/gen/voiceplane/v1/billing_pb.js';
import { file_voiceplane_v1_campaigns } from '../../../shared/gen/voiceplane/v1/campaigns_pb.js';
import { file_voiceplane_v1_connectors } from '../../../shared/gen/voiceplane/v1/connectors_pb.js';
import { file_voiceplane_v1_conversations } from '../../../shared/gen/voiceplane/v1/conversations_pb.js';
import { file_voiceplane_v1_health } from '../../../shared/gen/voiceplane/v1/health_pb.js';
import { file_voiceplane_v1_providers } from '../../../shared/gen/voiceplane/v1/providers_pb.js';
import { file_voiceplane_v1_qa } from '../../../shared/gen/voiceplane/v1/qa_pb.js';
import { file_voiceplane_v1_system_analytics } from '../../../shared/gen/voiceplane/v1/system_analytics_pb.js';
import { file_voiceplane_v1_telephony } from '../../../shared/gen/voiceplane/v1/telephony_pb.js';
import { file_voiceplane_v1_voice } from '../../../shared/gen/voiceplane/v1/voice_pb.js';
import { file_voiceplane_v1_webhooks } from '../../../shared/gen/voiceplane/v1/webhooks_pb.js';
import { file_voiceplane_v1_simtests } from '../../../shared/gen/voiceplane/v1/simtests_pb.js';
import { file_voiceplane_v1_portal } from '../../../shared/gen/voiceplane/v1/portal_pb.js';
import type { Principal } from '../../../control-plane/http/auth.js';
import { grants, isKnownScope, missingScopes, requireScope, ruleFor, SCOPE_TABLE, SCOPES } from '../../../control-plane/http/scopes.js';

const FILES: GenFile[] = [
  file_voiceplane_v1_alerts,
  file_voiceplane_v1_analysis,
  file_voiceplane_v1_analytics,
  file_voiceplane_v1_accounts,
  file_voiceplane_v1_agents,
  file_voiceplane_v1_billing,
  file_voiceplane_v1_campaigns,
  file_voiceplane_v1_connectors,
  file_voiceplane_v1_conversations,
  file_voiceplane_v1_health,
  file_voiceplane_v1_providers,
  file_voiceplane_v1_qa,
  file_voiceplane_v1_system_analytics,
  file_voiceplane_v1_telephony,
  file_voiceplane_v1_voice,
  file_voiceplane_v1_webhooks,
  file_voiceplane_v1_simtests,
  file_voiceplane_v1_portal,
];

const key = (scopes: string[]): Principal => ({ userId: 'u', email: 'e', isOrgOwner: false, via: 'api_key', scopes, apiKeyId: 'k' });

describe('scope table', () => {
  it('has an entry for every method of every proto service, and nothing else', () => {
    const methods = FILES.flatMap((f) => f.services.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`)));
    expect(methods.length).toBeGreaterThan(60);
    expect(methods.filter((m) => ruleFor(...(m.split('/') as [string, string])) === undefined)).toEqual([]);
    const tabled = Object.entries(SCOPE_TABLE).flatMap(([s, ms]) => Object.keys(ms).map((m) => `${s}/${m}`));
    expect(tabled.filter((m) => !methods.includes(m))).toEqual([]);
  });

  it('every scope it names is a known scope, and every known scope is used', () => {
    const used = new Set(Object.values(SCOPE_TABLE).flatMap((ms) => Object.values(ms)).filter((r) => r !== 'public' && r !== 'authenticated'));
    expect([...used].sort()).toEqual([...SCOPES].sort());
    expect(isKnownScope('*')).toBe(true);
    expect(isKnownScope('agents:admin')).toBe(false);
  });

  it('a method without an entry refuses every API key (fail closed) but not a dashboard session', () => {
    expect(() => requireScope(key([]), 'voiceplane.v1.NewService', 'DoThing')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(() => requireScope(key(['*']), 'voiceplane.v1.AgentService', 'Invented')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(() => requireScope({ ...key(['*']), via: 'jwt' }, 'voiceplane.v1.NewService', 'DoThing')).not.toThrow();
  });

  it('write implies read; empty and * are unscoped', () => {
    expect(grants(['agents:write'], 'agents:read')).toBe(true);
    expect(grants(['agents:read'], 'agents:write')).toBe(false);
    expect(grants([], 'memory:write')).toBe(true);
    expect(grants(['*'], 'memory:write')).toBe(true);
    expect(() => requireScope(key(['agents:read']), 'voiceplane.v1.AgentService', 'UpdateAgent')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(() => requireScope(key(['agents:read']), 'voiceplane.v1.AgentService', 'GetAgent')).not.toThrow();
    expect(() => requireScope(key(['agents:read']), 'voiceplane.v1.AuthService', 'Me')).not.toThrow();
  });

  it('keys may only mint subsets of their own scopes', () => {
    expect(missingScopes(['agents:read'], [])).toEqual(['*']);
    expect(missingScopes(['agents:read'], ['*'])).toEqual(['*']);
    expect(missingScopes(['agents:read', 'api_keys:write'], ['agents:read', 'memory:read'])).toEqual(['memory:read']);
    expect(missingScopes(['agents:write'], ['agents:read'])).toEqual([]);
    expect(missingScopes([], [])).toEqual([]);
  });
});
