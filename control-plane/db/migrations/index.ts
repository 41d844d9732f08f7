/**
 * Ordered list of migrations. Each lives in its own module as SQL text (so `npm run build` needs no
 * asset copying). Never edit an applied migration: add a new one.
 */
import { m0001_accounts } from './0001_accounts.js';
import { m0002_agents } from './0002_agents.js';
import { m0003_conversations } from './0003_conversations.js';
import { m0004_hardening } from './0004_hardening.js';
import { m0005_post_call } from './0005_post_call.js';
import { m0006_campaigns } from './0006_campaigns.js';
import { m0007_analysis } from './0007_analysis.js';
import { m0008_qa } from './0008_qa.js';
import { m0009_pipeline_events } from './0009_pipeline_events.js';
import { m0010_system_analytics } from './0010_system_analytics.js';
import { m0011_alerts } from './0011_alerts.js';
import { m0012_billing } from './0012_billing.js';
import { m0013_connectors } from './0013_connectors.js';
import { m0014_connector_oauth } from './0014_connector_oauth.js';
import { m0015_knowledge_search } from './0015_knowledge_search.js';
import { m0016_simtests } from './0016_simtests.js';
import { m0017_node_loss } from './0017_node_loss.js';
import { m0018_portal } from './0018_portal.js';
import { m0019_carrier_accounts } from './0019_carrier_accounts.js';
import { m0020_handoff_transcription } from './0020_handoff_transcription.js';
import { m0021_summary_requests } from './0021_summary_requests.js';
import { m0022_conversations_ws_call } from './0022_conversations_ws_call.js';
import { m0023_more_row_limits } from './0023_more_row_limits.js';
import { m0024_conversations_session_per_workspace } from './0024_conversations_session_per_workspace.js';
import { m0025_human_agent_inactive_periods } from './0025_human_agent_inactive_periods.js';
import { m0026_messages_billable } from './0026_messages_billable.js';
import { m0027_campaign_contacts_number } from './0027_campaign_contacts_number.js';
import { m0028_engine_nodes_left } from './0028_engine_nodes_left.js';
import { m0029_campaigns_agent_set_null } from './0029_campaigns_agent_set_null.js';
import { m0030_campaigns_status_reason } from './0030_campaigns_status_reason.js';
import { m0031_put_without_agent_no_post_call } from './0031_put_without_agent_no_post_call.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [m0001_accounts, m0002_agents, m0003_conversations, m0004_hardening, m0005_post_call, m0006_campaigns, m0007_analysis, m0008_qa, m0009_pipeline_events, m0010_system_analytics, m0011_alerts, m0012_billing, m0013_connectors, m0014_connector_oauth, m0015_knowledge_search, m0016_simtests, m0017_node_loss, m0018_portal, m0019_carrier_accounts, m0020_handoff_transcription, m0021_summary_requests, m0022_conversations_ws_call, m0023_more_row_limits, m0024_conversations_session_per_workspace, m0025_human_agent_inactive_periods, m0026_messages_billable, m0027_campaign_contacts_number, m0028_engine_nodes_left, m0029_campaigns_agent_set_null, m0030_campaigns_status_reason, m0031_put_without_agent_no_post_call];
