/**
 * The adapters this build ships. A catalog provider without one here is listed as not yet
 * available: the catalog route hides it and connect answers 404 (docs/connectors.md, "Status").
 */
import { calcom } from './calcom.js';
import { freshdesk } from './freshdesk.js';
import { googleWorkspace } from './google-workspace.js';
import { hubspot } from './hubspot.js';
import { jira } from './jira.js';
import { pipedrive } from './pipedrive.js';
import { servicenow } from './servicenow.js';
import { slack } from './slack.js';
import { stripe } from './stripe.js';
import { twilio } from './twilio.js';
import type { ProviderAdapter } from './types.js';
import { zendesk } from './zendesk.js';

export const ADAPTERS: ReadonlyMap<string, ProviderAdapter> = new Map(
  [
    hubspot,
    zendesk,
    stripe,
    calcom,
    slack,
    jira,
    pipedrive,
    twilio,
    freshdesk,
    servicenow,
    googleWorkspace,
  ].map((a) => [a.id, a]),
);
