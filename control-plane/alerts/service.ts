/**
 * AlertService: the spec's alert routes (doc 3, "System analytics and alerts"), one
 * implementation for REST, Connect and gRPC.
 *
 * Workspace: `workspace_id` (query or body), default the caller's own workspace, like the webhook
 * settings. Fencing: a named workspace of another organization is 403 (spec doc 3's error
 * table); a rule or event of a workspace the caller is not a member of is 404, like a missing row; an agent scope must name an agent of the rule's workspace (404 otherwise). Roles:
 * reads and `/alerts/test` any member; rule writes `admin` (channels make the service call
 * tenant URLs, as webhook settings do); resolving `manager`. Input is checked before any
 * workspace lookup, so bad input is a 400 naming the field whoever asks.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AlertEventSchema, AlertRuleSchema, AlertService } from '../../shared/gen/voiceplane/v1/alerts_pb.js';
import type { Clock } from '../../shared/clock.js';
import type { Sql } from '../../shared/db/client.js';
import { invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { assertTenantUrl, type OutboundPolicy } from '../../shared/outbound/index.js';
import type { Auth, WorkspaceRole } from '../http/auth.js';
import { intInRange, iso, oneOf, optionalNonEmpty, pathId, required, uuidField } from '../http/validate.js';
import { createOnce, sameFields } from '../http/create-once.js';
import { computeMetric, type MetricDeps } from './metrics.js';
import * as r from './rules.js';
import * as store from './store.js';

/** `GET /alerts/events`: default and most per request. */
export const DEFAULT_EVENTS_LIMIT = 50;
export const MAX_EVENTS_LIMIT = 200;
const EVENT_STATUSES = ['active', 'resolved'] as const;

export interface AlertServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
  registry: MetricDeps['registry'];
  policy: OutboundPolicy;
  /** Plain http channel URLs (WEBHOOK_ALLOW_HTTP, development only). */
  allowHttp: boolean;
}

export function createAlertService(deps: AlertServiceDeps): ServiceImpl<typeof AlertService> {
  const { sql, auth, clock } = deps;
  const protocols = deps.allowHttp ? ['https:', 'http:'] : ['https:'];
  const checkUrl = (field: string, url: string) => assertTenantUrl(url, field, deps.policy, protocols).href;

  async function workspace(ctx: HandlerContext, requested: string | undefined, min: WorkspaceRole): Promise<string> {
    const p = await auth.principal(ctx);
    const ws = requested || (await auth.defaultWorkspaceId(p));
    if (!ws) throw invalid('workspace_id', 'is required (the caller owns no workspace)');
    if (!isUuid(ws)) throw invalid('workspace_id', 'must be a UUID');
    // Another organization's workspace is 403 (spec doc 3's error table); rules and events found by id stay 404.
    await auth.requireWorkspace(p, ws, { min, onDenied: 'forbidden' });
    return ws.toLowerCase();
  }

  async function ruleOr404(ctx: HandlerContext, id: string | undefined, min: WorkspaceRole): Promise<store.RuleRow> {
    const p = await auth.principal(ctx);
    const rule = await store.getRule(sql, pathId('alert rule', id));
    await auth.requireRowWorkspace(p, rule?.workspace_id, 'alert rule', min);
    return rule!;
  }

  /** An agent scope names an agent of this workspace; anything else is not found. */
  async function checkAgent(scope: r.Scope, workspaceId: string): Promise<void> {
    if (scope.type === 'agent' && (await store.agentWorkspace(sql, scope.agentId!)) !== workspaceId) throw notFound('agent');
  }

  /** A webhook channel is signed with the workspace's webhook secret: one must exist. */
  async function checkWebhookSecret(channels: r.Channels, workspaceId: string): Promise<void> {
    if (channels.webhook.length && !(await store.webhookSecretEnc(sql, workspaceId))) {
      throw invalid('channels.webhook', 'needs the workspace webhook secret (set a webhook URL with PUT /api/v1/call-center/settings first)');
    }
  }

  return {
    async listAlertRules(req, ctx) {
      const ws = await workspace(ctx, req.workspaceId, 'member');
      return { rules: (await store.listRules(sql, ws)).map(ruleView) };
    },

    async createAlertRule(req, ctx) {
      await auth.principal(ctx);
      const name = required('name', req.name);
      const metric = r.parseMetric(req.metric, true)!;
      const operator = r.parseOperator(req.operator, true)!;
      const component = r.resolveComponent(metric, req.component);
      const scope = r.parseScope(req.scope) ?? { type: 'workspace', agentId: null };
      r.checkScopeFits(metric, scope);
      const threshold = r.parseThreshold(req.threshold) ?? 0;
      const windowMinutes = r.parseWindow(req.windowMinutes) ?? r.DEFAULT_WINDOW_MINUTES;
      const cooldownMinutes = r.parseCooldown(req.cooldownMinutes) ?? r.DEFAULT_COOLDOWN_MINUTES;
      const channels = r.parseChannels(req.channels, checkUrl) ?? { email: [], webhook: [], slack: [] };
      const id = uuidField('id', req.id) ?? newId();
      const ws = await workspace(ctx, req.workspaceId, 'admin');
      await checkAgent(scope, ws);
      await checkWebhookSecret(channels, ws);
      const fields: store.RuleFields = {
        name,
        metric,
        component,
        scope_type: scope.type,
        agent_id: scope.agentId,
        operator,
        threshold,
        window_minutes: windowMinutes,
        cooldown_minutes: cooldownMinutes,
        channels,
        enabled: req.enabled ?? true,
      };
      const { row } = await createOnce({
        what: 'an alert rule',
        find: () => store.getRule(sql, id),
        insert: () => store.insertRule(sql, id, ws, fields, new Date(clock.now())),
        same: (existing) => sameFields(existing, { ...fields, workspace_id: ws }, ['workspace_id', ...Object.keys(fields)]),
      });
      return ruleView(row);
    },

    async updateAlertRule(req, ctx) {
      const name = optionalNonEmpty('name', req.name);
      const metricIn = r.parseMetric(req.metric, false);
      const operator = r.parseOperator(req.operator, false);
      const scopeIn = r.parseScope(req.scope);
      const threshold = r.parseThreshold(req.threshold);
      const windowMinutes = r.parseWindow(req.windowMinutes);
      const cooldownMinutes = r.parseCooldown(req.cooldownMinutes);
      const channelsIn = r.parseChannels(req.channels, checkUrl);
      const rule = await ruleOr404(ctx, req.ruleId, 'admin');
      const metric = metricIn ?? (rule.metric as r.Metric);
      // A new metric drops a component that no longer applies; an explicit one is checked.
      const component = r.resolveComponent(metric, req.component ?? (metricIn && metricIn !== rule.metric ? undefined : rule.component || undefined));
      const scope = scopeIn ?? { type: rule.scope_type, agentId: rule.agent_id };
      r.checkScopeFits(metric, scope);
      if (scopeIn) await checkAgent(scope, rule.workspace_id);
      const channels = channelsIn ?? rule.channels;
      if (channelsIn) await checkWebhookSecret(channels, rule.workspace_id);
      const row = await store.updateRule(
        sql,
        rule.id,
        {
          name: name ?? rule.name,
          metric,
          component,
          scope_type: scope.type,
          agent_id: scope.agentId,
          operator: operator ?? rule.operator,
          threshold: threshold ?? rule.threshold,
          window_minutes: windowMinutes ?? rule.window_minutes,
          cooldown_minutes: cooldownMinutes ?? rule.cooldown_minutes,
          channels,
          enabled: req.enabled ?? rule.enabled,
        },
        new Date(clock.now()),
      );
      if (!row) throw notFound('alert rule');
      return ruleView(row);
    },

    async deleteAlertRule(req, ctx) {
      const rule = await ruleOr404(ctx, req.ruleId, 'admin');
      if (!(await store.deleteRule(sql, rule.id))) throw notFound('alert rule');
      return { deleted: true };
    },

    async listAlertEvents(req, ctx) {
      const status = oneOf('status', req.status || undefined, EVENT_STATUSES);
      const limit = intInRange('limit', req.limit, 1, MAX_EVENTS_LIMIT) ?? DEFAULT_EVENTS_LIMIT;
      const ws = await workspace(ctx, req.workspaceId, 'member');
      const events = await store.listEvents(sql, ws, status, limit);
      const notes = await store.notificationsOf(
        sql,
        events.map((e) => e.id),
      );
      return { events: events.map((e) => eventView(e, notes)) };
    },

    async resolveAlertEvent(req, ctx) {
      const p = await auth.principal(ctx);
      const event = await store.getEvent(sql, pathId('alert event', req.eventId));
      await auth.requireRowWorkspace(p, event?.workspace_id, 'alert event', 'manager');
      // Already resolved (by the evaluator or a second click): the answer is the same.
      await sql`
        update alert_events set status = 'resolved', resolved_at = ${new Date(clock.now())}, resolution = 'manual', resolved_by = ${p.userId}
        where id = ${event!.id} and status = 'active'`;
      return { resolved: true };
    },

    async getActiveAlertCount(req, ctx) {
      const ws = await workspace(ctx, req.workspaceId, 'member');
      return { count: await store.activeCount(sql, ws) };
    },

    async testAlertRule(req, ctx) {
      await auth.principal(ctx);
      const metric = r.parseMetric(req.metric, true)!;
      const operator = r.parseOperator(req.operator, true)!;
      const component = r.resolveComponent(metric, req.component);
      const scope = r.parseScope(req.scope) ?? { type: 'workspace', agentId: null };
      r.checkScopeFits(metric, scope);
      const threshold = r.parseThreshold(req.threshold) ?? 0;
      const windowMinutes = r.parseWindow(req.windowMinutes) ?? r.DEFAULT_WINDOW_MINUTES;
      const ws = await workspace(ctx, req.workspaceId, 'member');
      await checkAgent(scope, ws);
      // The evaluator's computation, without its writes: no event, no notification, no node record.
      const value = await computeMetric(deps, { workspaceId: ws, metric, component, scope, windowMinutes, nowMs: clock.now() });
      return { observedValue: value ?? undefined, threshold, operator, fired: value !== null && r.compare(value, operator, threshold) };
    },
  };
}

export function ruleView(row: store.RuleRow): MessageInitShape<typeof AlertRuleSchema> {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    metric: row.metric,
    component: row.component,
    scope: { type: row.scope_type, agentId: row.agent_id ?? '' },
    operator: row.operator,
    threshold: row.threshold,
    windowMinutes: row.window_minutes,
    cooldownMinutes: row.cooldown_minutes,
    channels: row.channels,
    enabled: row.enabled,
    lastEvaluatedAt: iso(row.last_evaluated_at),
    lastValue: row.last_value ?? undefined,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

function eventView(e: store.EventRow, notes: store.NotificationRow[]): MessageInitShape<typeof AlertEventSchema> {
  return {
    id: e.id,
    ruleId: e.rule_id,
    ruleName: e.rule_name,
    workspaceId: e.workspace_id,
    metric: e.metric,
    component: e.component,
    scope: { type: e.scope_type, agentId: e.agent_id ?? '' },
    operator: e.operator,
    threshold: e.threshold,
    observedValue: e.observed_value,
    status: e.status,
    triggeredAt: iso(e.triggered_at),
    resolvedAt: iso(e.resolved_at),
    resolution: e.resolution ?? '',
    resolvedBy: e.resolved_by ?? '',
    notifications: notes
      .filter((n) => n.event_id === e.id)
      .map((n) => ({
        id: n.id,
        channel: n.channel,
        target: n.target,
        kind: n.kind,
        status: n.status,
        attempts: n.attempts,
        lastError: n.last_error ?? undefined,
        deliveredAt: iso(n.delivered_at),
      })),
  };
}
